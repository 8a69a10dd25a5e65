"""transformers 4.38.2's tests/generation/test_configuration_utils.py scenarios: GenerationConfig saved and
loaded, updated, built from a model config, validated, refused when invalid (same inputs and checks as the
transformers tests of the same names; tools/transformers_api/run_against_4382.py runs this file on 4.38.2).

The model config of ``gpt2`` comes from the shipped ``models/gpt2-tiny`` (same generation fields: bos = eos =
50256). Left out: ``get_generation_mode`` (transformers 4.39).
"""

from __future__ import annotations

import copy
import os
import tempfile
import unittest
import warnings

from refdecode import GenerationConfig
from transformers_api.shim import AutoConfig, expand


def saved_and_loaded(config, **load_kwargs):
    with tempfile.TemporaryDirectory() as tmp_dir:
        config.save_pretrained(tmp_dir)
        return GenerationConfig.from_pretrained(tmp_dir, **load_kwargs)


class GenerationConfigTest(unittest.TestCase):
    @expand([(None,), ("foo.json",)])
    def test_save_load_config(self, config_name):
        config = GenerationConfig(do_sample=True, temperature=0.7, length_penalty=1.0, bad_words_ids=[[1, 2, 3], [4, 5]])
        with tempfile.TemporaryDirectory() as tmp_dir:
            config.save_pretrained(tmp_dir, config_name=config_name)
            loaded = GenerationConfig.from_pretrained(tmp_dir, config_name=config_name)

        # what was set survives the round trip...
        self.assertEqual(loaded.do_sample, True)
        self.assertEqual(loaded.temperature, 0.7)
        self.assertEqual(loaded.length_penalty, 1.0)
        self.assertEqual(loaded.bad_words_ids, [[1, 2, 3], [4, 5]])
        # ...and the rest keeps its default
        self.assertEqual(loaded.top_k, 50)
        self.assertEqual(loaded.max_length, 20)
        self.assertEqual(loaded.max_time, None)

    def test_from_model_config(self):
        model_config = AutoConfig.from_pretrained("openai-community/gpt2")
        from_model = GenerationConfig.from_model_config(model_config)
        default = GenerationConfig()

        # the model config brings generation fields of its own: eos among them
        self.assertNotEqual(from_model, default)
        self.assertNotEqual(from_model.eos_token_id, default.eos_token_id)
        self.assertEqual(from_model.eos_token_id, model_config.eos_token_id)

    def test_update(self):
        generation_config = GenerationConfig()
        update_kwargs = {"max_new_tokens": 1024, "foo": "bar"}
        update_kwargs_copy = copy.deepcopy(update_kwargs)

        unused_kwargs = generation_config.update(**update_kwargs)
        self.assertEqual(update_kwargs, update_kwargs_copy)  # the argument is not modified
        self.assertEqual(generation_config.max_new_tokens, 1024)  # fields are set
        self.assertEqual(unused_kwargs, {"foo": "bar"})  # what is not a field comes back

    def test_initialize_new_kwargs(self):
        generation_config = GenerationConfig()
        generation_config.foo = "bar"
        with tempfile.TemporaryDirectory("test-generation-config") as tmp_dir:
            generation_config.save_pretrained(tmp_dir)
            new_config = GenerationConfig.from_pretrained(tmp_dir)
        self.assertEqual(new_config.foo, "bar")  # an attribute that is not a field is saved and loaded

        generation_config = GenerationConfig.from_model_config(new_config)
        assert not hasattr(generation_config, "foo")  # but not taken from a model config

    def test_kwarg_init(self):
        default_config = GenerationConfig()
        self.assertEqual(default_config.temperature, 1.0)
        self.assertEqual(default_config.do_sample, False)
        self.assertEqual(default_config.num_beams, 1)

        config = GenerationConfig(do_sample=True, temperature=0.7, length_penalty=1.0, bad_words_ids=[[1, 2, 3], [4, 5]])
        self.assertEqual(config.temperature, 0.7)
        self.assertEqual(config.do_sample, True)
        self.assertEqual(config.num_beams, 1)

        loaded_config = saved_and_loaded(config, temperature=1.0)  # from_pretrained's keywords override the file
        self.assertEqual(loaded_config.temperature, 1.0)
        self.assertEqual(loaded_config.do_sample, True)
        self.assertEqual(loaded_config.num_beams, 1)

    def assert_warnings(self, count, make):
        with warnings.catch_warnings(record=True) as captured_warnings:
            warnings.simplefilter("always")
            make()
        self.assertEqual(len(captured_warnings), count)

    def test_validate(self):
        self.assert_warnings(0, GenerationConfig)  # a correct configuration is silent
        # a value the mode ignores warns (temperature without sampling)
        self.assert_warnings(1, lambda: GenerationConfig(do_sample=False, temperature=0.5))
        # update validates again: a still-set value warns; the default value and None do not
        for value, count in ((0.9, 1), (1.0, 0), (None, 0)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bad_temperature = GenerationConfig(do_sample=False, temperature=0.5)
            self.assert_warnings(count, lambda: bad_temperature.update(temperature=value))

        # impossible combinations raise
        with self.assertRaises(ValueError):
            GenerationConfig(do_sample=False, num_beams=1, num_return_sequences=2)
        with self.assertRaises(ValueError):
            GenerationConfig(do_sample=True, num_beams=2, constraints=["dummy"])
        # (transformers' later text also expects force_words_ids with do_sample=True to raise here; 4.38.2's
        # validate accepts it, as refdecode's does: not a 4.38.2 scenario)
        # generate()-only arguments are not configuration
        with self.assertRaises(ValueError):
            GenerationConfig(logits_processor="foo")
        # a model-specific keyword is kept, silently
        self.assert_warnings(0, lambda: GenerationConfig(foo="bar"))

    def test_refuse_to_save(self):
        def refused(config):
            with tempfile.TemporaryDirectory() as tmp_dir:
                with self.assertRaises(ValueError) as exc:
                    config.save_pretrained(tmp_dir)
                self.assertTrue("Fix these issues to save the configuration." in str(exc.exception))
                self.assertTrue(len(os.listdir(tmp_dir)) == 0)

        config = GenerationConfig()
        config.temperature = 0.5  # validate warns (no sampling): not saved
        refused(config)

        config = GenerationConfig()
        config.num_return_sequences = 2  # validate raises (greedy returns one sequence): not saved
        refused(config)

        config = GenerationConfig()  # valid: saved, silently, as one file
        with tempfile.TemporaryDirectory() as tmp_dir:
            with warnings.catch_warnings(record=True) as captured_warnings:
                warnings.simplefilter("always")
                config.save_pretrained(tmp_dir)
            self.assertEqual(len(captured_warnings), 0)
            self.assertTrue(len(os.listdir(tmp_dir)) == 1)


@unittest.skip("hub: ConfigPushToHubTester pushes to and loads from the Hugging Face hub (staging); refdecode has "
               "no hub client and nothing is downloaded")
class ConfigPushToHubTester(unittest.TestCase):
    def test_push_to_hub(self):
        pass

    def test_push_to_hub_in_organization(self):
        pass
