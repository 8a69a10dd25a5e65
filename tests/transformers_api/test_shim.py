"""The shim itself: torch's meanings where the scenarios call torch methods, and no effect on refdecode's numbers.

Also checks the porting rule the folder rests on: a scenario module imports only from ``refdecode``,
``transformers_api.shim`` and the standard library, so run_against_4382.py, which swaps those two imports, runs
exactly what the package's tests run; and run_against_4382.py lists every scenario module.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

import refdecode
from transformers_api.shim import Tensor, nn, torch

HERE = Path(__file__).resolve().parent
RUNNER = HERE.parents[1] / "tools" / "transformers_api" / "run_against_4382.py"
SCENARIOS = sorted(p.stem for p in HERE.glob("test_*.py") if p.stem != "test_shim")


def test_torch_meanings_of_the_methods_the_scenarios_call():
    row = torch.arange(3, dtype=torch.float)
    assert row.dtype == np.float32 and torch.arange(3).dtype == np.int64
    tiled = row.unsqueeze(0).repeat(2, 1)  # torch's repeat tiles
    assert tiled.tolist() == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]
    values, indices = torch.tensor([[0.5, 2.0, 1.0]]).sort(descending=True)
    assert values.tolist() == [[2.0, 1.0, 0.5]] and indices.tolist() == [[1, 2, 0]]
    assert (tiled == 0.0).to(torch.long).sum(dim=-1).tolist() == [1, 1]
    assert (tiled > 1).nonzero().tolist() == [[0, 2], [1, 2]]  # (N, ndim), as torch
    assert tiled.size(0) == 2 and tiled.size() == (2, 3) and tiled.size == 6  # callable, and NumPy's count
    assert tiled.clone() is not tiled and isinstance(tiled.clone(), Tensor)
    assert torch.tensor([1.5]).dtype == np.float32 and torch.tensor([1]).dtype == np.int64
    probs = nn.functional.softmax(torch.tensor([[0.0, np.log(3.0)]]), dim=-1)
    assert np.allclose(probs, [[0.25, 0.75]])


def test_numpy_meanings_inside_numpy_and_refdecode():
    a = Tensor(np.array([[3.0, 1.0, 2.0]], dtype=np.float32))
    assert np.repeat(a, 2, axis=0).shape == (2, 3)  # NumPy's repeat (np.repeat, np.tile call the method)
    assert np.tile(a, (2, 1)).shape == (2, 3)
    assert np.sort(a).tolist() == [[1.0, 2.0, 3.0]]
    assert [x.tolist() for x in np.nonzero(a > 1.5)] == [[0, 0], [0, 2]]
    assert isinstance(np.where(a > 1.5, a, 0.0), Tensor)  # NumPy functions of a Tensor return a Tensor


@pytest.mark.parametrize("processor", [
    refdecode.TopPLogitsWarper(0.8), refdecode.TopKLogitsWarper(3), refdecode.TypicalLogitsWarper(0.5),
    refdecode.EpsilonLogitsWarper(0.05), refdecode.EtaLogitsWarper(0.05), refdecode.TemperatureLogitsWarper(0.7),
    refdecode.RepetitionPenaltyLogitsProcessor(1.3), refdecode.NoRepeatNGramLogitsProcessor(2),
    refdecode.MinLengthLogitsProcessor(10, eos_token_id=0), refdecode.LogitNormalization(),
    refdecode.InfNanRemoveLogitsProcessor(), refdecode.NoBadWordsLogitsProcessor([[1], [2, 3]], eos_token_id=0),
], ids=lambda p: type(p).__name__)
def test_refdecode_computes_the_same_on_a_tensor(processor):
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 17, size=(3, 6))
    scores = (rng.standard_normal((3, 17)) * 3).astype(np.float32)
    plain = processor(ids, scores.copy())
    shimmed = processor(Tensor(ids), Tensor(scores.copy()))
    assert type(plain) is np.ndarray and isinstance(shimmed, Tensor)
    np.testing.assert_array_equal(shimmed.view(np.ndarray), plain)  # bit for bit


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenarios_import_only_refdecode_the_shim_and_the_standard_library(name):
    tree = ast.parse((HERE / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            top = module.split(".")[0]
            assert module in ("refdecode", "transformers_api.shim") or top in sys.stdlib_module_names, \
                f"{name} imports {module}: run_against_4382.py would not redirect it"


def test_the_runner_lists_every_scenario_module():
    tree = ast.parse(RUNNER.read_text())
    listed = next(ast.literal_eval(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "MODULES")
    assert sorted(listed) == SCENARIOS
