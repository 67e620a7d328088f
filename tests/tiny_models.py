"""Small model folders for the fault and bad-input suites: a two-layer Llama with the offline BERT tokenizer.

Built offline in seconds, saved with ``save_pretrained`` like any local folder, and registered as a
fake offline short name (``fake-tiny``) whose converted copy goes through the same locked, hashed
conversion as the GGUF models.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

WORKER = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import tiny_models
import time
import safetensors.torch
from connlap_lite.models import load as models
tiny_models.register(models, Path({folder!r}))
_save = safetensors.torch.save_model
def slow_save(*args, **kw):          # a conversion as slow as a real one, so that the processes overlap
    time.sleep(1.0)
    return _save(*args, **kw)
safetensors.torch.save_model = slow_save
sources = []
offline_source = models.offline_source
models.offline_source = lambda name: sources.append(name) or offline_source(name)
ready = {ready!r}
if ready:
    Path(ready).write_text("loading")
model, tok = models.load_model("fake-tiny")
print(json.dumps({{"sum": float(sum(p.detach().double().sum() for p in model.parameters())), "vocab": len(tok),
                  "converted": len(sources)}}))
"""


def make_folder(folder: Path, *, layers: int = 2, seed: int = 0) -> Path:
    """Save a tiny random Llama (``layers`` layers, hidden size 32) and a tokenizer into ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig

    from connlap_lite.models.load import offline_source

    tok = AutoTokenizer.from_pretrained(offline_source("minilm-l6")[0])
    torch.manual_seed(seed)
    config = LlamaConfig(num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                         intermediate_size=64, vocab_size=len(tok), max_position_embeddings=64,
                         pad_token_id=tok.pad_token_id)
    model = AutoModelForCausalLM.from_config(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def register(models, folder: Path) -> None:
    """Make ``fake-tiny`` an offline short name whose source is ``folder`` (converted like a GGUF model)."""
    models.OFFLINE["fake-tiny"] = "fake-tiny==0"
    models.offline_source = lambda name, _folder=str(folder): (_folder, {})


def worker_command(folder: Path, ready: Path | None = None) -> list[str]:
    """A Python command that loads ``fake-tiny`` from ``folder`` and prints as JSON its weights' sum and whether
    it converted the model itself; it writes ``ready`` (if given) just before it starts loading."""
    code = WORKER.format(tests=str(Path(__file__).parent), folder=str(folder), ready=str(ready or ""))
    return [sys.executable, "-c", code]


def parse(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def make_gpt_neox_folder(folder: Path, *, layers: int = 2, seed: int = 0) -> Path:
    """Save a tiny random GPT-NeoX (Pythia's layout: parallel residual, a quarter of each head rotary) and the
    offline BERT tokenizer into ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GPTNeoXConfig

    from connlap_lite.models.load import offline_source

    tok = AutoTokenizer.from_pretrained(offline_source("minilm-l6")[0])
    torch.manual_seed(seed)
    config = GPTNeoXConfig(num_hidden_layers=layers, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                           vocab_size=len(tok), max_position_embeddings=64, rotary_pct=0.25,
                           use_parallel_residual=True, pad_token_id=tok.pad_token_id)
    model = AutoModelForCausalLM.from_config(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


# ---- one tiny random model per family the adapters support (no download) ----

_D = dict(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64, max_position_embeddings=64)
_G = dict(_D, num_key_value_heads=2)


def _configs(vocab: int) -> dict:
    """``name -> config`` for every family tested: the original six, then the interface's new ones."""
    import transformers as T

    d, g = dict(_D, vocab_size=vocab), dict(_G, vocab_size=vocab)
    ids = dict(pad_token_id=0, bos_token_id=0, eos_token_id=0)
    return {
        # the six families of the adapter path
        "gpt2": lambda: T.GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=vocab, n_positions=64, **ids),
        "bert": lambda: T.BertConfig(**d),
        "roberta": lambda: T.RobertaConfig(**d, pad_token_id=1),
        "gpt_neox": lambda: T.GPTNeoXConfig(**d, rotary_pct=0.25, **ids),                  # Pythia's partial rotary
        "llama": lambda: T.LlamaConfig(**g, **ids),                                         # GQA
        "mistral": lambda: T.MistralConfig(**dict(g, num_key_value_heads=1), sliding_window=3, **ids),   # MQA, window
        "qwen2": lambda: T.Qwen2Config(**g, **ids),                                          # value biases
        "gemma3": lambda: T.Gemma3TextConfig(**g, head_dim=16, sliding_window=3, query_pre_attn_scalar=8, **ids,
                                             layer_types=["sliding_attention", "full_attention"]),   # QK-norm
        # new with the attention interface
        "qwen3": lambda: T.Qwen3Config(**g, head_dim=8, **ids),                              # QK-norm
        "olmo2": lambda: T.Olmo2Config(**g, **ids),                                          # QK-norm, post-norm
        "olmo": lambda: T.OlmoConfig(**d, **ids),                                            # LayerNorm without gain
        "cohere": lambda: T.CohereConfig(**g, use_qk_norm=True, **ids),                      # parallel block
        "stablelm": lambda: T.StableLmConfig(**g, partial_rotary_factor=0.25, **ids),        # partial rotary
        "phi": lambda: T.PhiConfig(**d, partial_rotary_factor=0.5, qk_layernorm=True, **ids),  # dense output map
        "phi3": lambda: T.Phi3Config(**g, **ids),                                            # fused qkv_proj
        "granite": lambda: T.GraniteConfig(**g, attention_multiplier=0.3, **ids),            # its own scaling
        "starcoder2": lambda: T.Starcoder2Config(**g, sliding_window=3, **ids),              # window, biases
        "helium": lambda: T.HeliumConfig(**g, head_dim=8, **ids),
        "smollm3": lambda: T.SmolLM3Config(**g, **ids),                                      # layers without rotary
        "gemma2": lambda: T.Gemma2Config(**g, head_dim=8, attn_logit_softcapping=0.5, sliding_window=3,
                                         query_pre_attn_scalar=8, **ids),                    # soft-capping
        "mixtral": lambda: T.MixtralConfig(**g, num_local_experts=4, num_experts_per_tok=2, **ids),    # experts
        "qwen2_moe": lambda: T.Qwen2MoeConfig(**g, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                                              shared_expert_intermediate_size=16, **ids),
        "olmoe": lambda: T.OlmoeConfig(**g, num_experts=4, num_experts_per_tok=2, **ids),
        "gpt_oss": lambda: T.GptOssConfig(**g, head_dim=8, num_local_experts=4, num_experts_per_tok=2,
                                          sliding_window=3, layer_types=["sliding_attention", "full_attention"],
                                          **ids),                                            # sink logits
        "distilbert": lambda: T.DistilBertConfig(n_layers=2, n_heads=4, dim=32, hidden_dim=64, vocab_size=vocab,
                                                 max_position_embeddings=64, pad_token_id=0),
        "electra": lambda: T.ElectraConfig(**d, embedding_size=32),
    }


def _unlisted(vocab: int) -> dict:
    """``name -> config`` for model types not in ``adapters.FAMILIES`` whose attention has Llama's layout: read
    through it after a check on the spot (tests/models/test_unlisted_families.py), never part of ``TESTED``."""
    import transformers as T

    g = dict(_G, vocab_size=vocab, head_dim=8, pad_token_id=0, bos_token_id=0, eos_token_id=0)
    return {
        "arcee": lambda: T.ArceeConfig(**g),
        "seed_oss": lambda: T.SeedOssConfig(**g),                                            # value biases
        "qwen3_moe": lambda: T.Qwen3MoeConfig(**g, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16),
        "exaone4": lambda: T.Exaone4Config(**g, sliding_window=3, layer_types=["sliding_attention",
                                                                                "full_attention"]),   # post-norm
        "ernie4_5": lambda: T.Ernie4_5Config(**g),
        "glm4": lambda: T.Glm4Config(**g, partial_rotary_factor=0.5),               # the attention's output normed
    }


FAMILIES = tuple(_configs(100))
UNLISTED = tuple(_unlisted(100))
NEW = FAMILIES[FAMILIES.index("qwen3"):]            # the families the attention interface added
ENCODERS = ("bert", "roberta", "distilbert", "electra")


def build(name: str, implementation: str = "eager", *, vocab: int = 100, seed: int = 0):
    """A tiny random model of family ``name`` in eval mode, biases, norm gains and sink logits drawn at random
    (a fresh model's zero biases and unit gains would hide a misread bias layout or gain)."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM

    torch.manual_seed(seed)
    auto = AutoModel if name in ENCODERS else AutoModelForCausalLM
    config = (_unlisted(vocab) if name in UNLISTED else _configs(vocab))[name]()
    model = auto.from_config(config, attn_implementation=implementation).eval()
    with torch.no_grad():
        for key, p in model.named_parameters():
            if key.endswith("bias"):
                p.normal_(0.0, 0.02)
            elif p.ndim == 1 and "sinks" in key:
                p.normal_(0.0, 1.0)
            elif p.ndim == 1:                            # norm gains (Gemma's 1 + w included)
                p.add_(0.3 * torch.randn_like(p))
    return model


def save_family(name: str, folder: Path) -> Path:
    """Save a tiny random model of family ``name`` with the offline BERT tokenizer (``verify FOLDER`` reads it)."""
    from transformers import AutoTokenizer

    from connlap_lite.models.load import offline_source

    tok = AutoTokenizer.from_pretrained(offline_source("minilm-l6")[0])
    model = build(name, vocab=len(tok))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


# ---- folders that lie: code to run, weights of another model ----

EVIL = """from pathlib import Path
Path(__file__).with_name("RAN-CODE").write_text("the folder's code ran")
from transformers import PreTrainedTokenizerFast, PretrainedConfig
class EvilTokenizer(PreTrainedTokenizerFast):
    pass
class EvilConfig(PretrainedConfig):
    model_type = "llama"
"""


def with_code(folder: Path, file: str) -> Path:
    """``folder`` with an ``auto_map`` in ``file`` (``config.json`` or ``tokenizer_config.json``) that points to
    ``evil.py`` in the folder, which writes ``RAN-CODE`` there when it is imported."""
    (folder / "evil.py").write_text(EVIL)
    data = json.loads((folder / file).read_text())
    if file == "config.json":
        data["auto_map"] = {"AutoConfig": "evil.EvilConfig"}
    else:
        data["auto_map"] = {"AutoTokenizer": ["evil.EvilTokenizer", "evil.EvilTokenizer"]}
    (folder / file).write_text(json.dumps(data))
    return folder


def with_weights_of(folder: Path, other: Path) -> Path:
    """``folder``, its weights file replaced by ``other``'s (a config of one family over another's weights)."""
    import shutil

    shutil.copy(other / "model.safetensors", folder / "model.safetensors")
    return folder


def without_weight(folder: Path, key: str) -> Path:
    """``folder`` whose weights file has lost the tensor ``key``."""
    from safetensors.torch import load_file, save_file

    weights = load_file(str(folder / "model.safetensors"))
    del weights[key]
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder
