"""Time transformers 5.x on the GPT-2-124M-shaped checkpoint: the control's bench
(examples/engines/transformers-4.38.2/bench.py) in 5.x's env, with its options.

    examples/engines/transformers-5/env/bin/python examples/engines/transformers-5/bench.py [--model DIR]
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "transformers-4.38.2" / "bench.py"), run_name="__main__")
