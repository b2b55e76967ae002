"""Random-weight models built from transformers configs, saved like hub checkpoints.

No weights can be downloaded on the machines this project is tested on, so tests, benchmarks and offline
demos build models here and load them through the real loading code (a local directory). Latency does
not depend on weight values, so ``"smolvlm-256m"`` measures a real-size architecture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from vlm.backends.learned import build_net, save_learned
from vlm.errors import VLMError
from vlm.prompts import prompt_hash

VLMArch = Literal["qwen2-vl", "idefics3"]
VLMSize = Literal["tiny", "smolvlm-256m"]

_ANSWER_WORDS = ("yes", "Yes", "YES", "no", "No", "NO")


def train_bpe_tokenizer(special_tokens: list[str], vocab_size: int = 400, **named_tokens: str) -> Any:
    """A byte-level BPE tokenizer trained on a tiny corpus in which every yes/no variant, with and
    without a leading space, becomes one token; wrapped in ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [w + " " + " ".join(_ANSWER_WORDS) for w in _ANSWER_WORDS] * 50
    corpus += ["Did the robot arm lift the cube? Answer yes or no. user assistant"] * 10
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **named_tokens)


_QWEN_CHAT = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif part['type'] == 'text' %}{{ part['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_IDEFICS_CHAT = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}:"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)


def _qwen2_vl(size: VLMSize) -> tuple[Any, Any]:
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    if size != "tiny":
        raise VLMError(f"qwen2-vl is built only in size 'tiny', not {size!r}")
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>"]
    specials += ["<|image_pad|>", "<|video_pad|>"]
    tok = train_bpe_tokenizer(specials, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    ids = {t: tok.convert_tokens_to_ids(t) for t in specials}
    image_processor = Qwen2VLImageProcessor(
        min_pixels=28 * 28, max_pixels=56 * 56, patch_size=14, merge_size=2
    )
    processor = Qwen2VLProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=_QWEN_CHAT,
    )
    text = dict(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=1024,
        rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    vision = dict(depth=1, embed_dim=32, hidden_size=32, num_heads=2, mlp_ratio=2, patch_size=14)
    config = Qwen2VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    return Qwen2VLForConditionalGeneration(config), processor


def _idefics3(size: VLMSize) -> tuple[Any, Any]:
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
    )

    specials = ["<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>"]
    specials += ["<image>", "<global-img>"]
    tok = train_bpe_tokenizer(
        specials, eos_token="<end_of_utterance>", pad_token="<|endoftext|>", bos_token="<|im_start|>"
    )
    if size == "tiny":
        image_side, patch, scale = 32, 8, 2
        text: dict[str, Any] = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1)
        text.update(num_attention_heads=2, num_key_value_heads=1, vocab_size=len(tok))
        vision: dict[str, Any] = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1)
        vision.update(num_attention_heads=2)
    else:  # SmolVLM-256M-Instruct: SmolLM2-135M text tower, SigLIP-B/16 at 512 px, pixel shuffle 4.
        image_side, patch, scale = 512, 16, 4
        text = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9)
        text.update(num_key_value_heads=3, vocab_size=49280, rope_theta=100000.0)
        vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12)
    image_processor = Idefics3ImageProcessor(
        do_image_splitting=False,
        size={"longest_edge": image_side},
        max_image_size={"longest_edge": image_side},
    )
    processor = Idefics3Processor(
        image_processor=image_processor,
        tokenizer=tok,
        image_seq_len=(image_side // patch) ** 2 // scale**2,
        chat_template=_IDEFICS_CHAT,
    )
    pad, bos, eos = (
        tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|im_start|>", "<end_of_utterance>")
    )
    text.update(model_type="llama", max_position_embeddings=8192, pad_token_id=pad, bos_token_id=bos)
    text.update(eos_token_id=eos, tie_word_embeddings=True)
    vision.update(image_size=image_side, patch_size=patch)
    config = Idefics3Config(
        text_config=text,
        vision_config=vision,
        scale_factor=scale,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        **{"pad_token_id": pad},
    )
    return Idefics3ForConditionalGeneration(config), processor


def build_random_vlm(arch: VLMArch = "idefics3", size: VLMSize = "tiny", seed: int = 0) -> tuple[Any, Any]:
    """A random-weight VLM (eval mode) and its processor, in memory.

    Args:
        arch: ``"qwen2-vl"`` (Qwen2-VL-style) or ``"idefics3"`` (SmolVLM/Idefics3-style).
        size: ``"tiny"`` (hidden size 32, one layer, for tests) or ``"smolvlm-256m"`` (idefics3 only:
            the SmolVLM-256M-Instruct architecture, without image splitting).
        seed: torch seed of the random weights.
    """
    import torch

    builders = {"qwen2-vl": _qwen2_vl, "idefics3": _idefics3}
    if arch not in builders:
        raise VLMError(f"unknown random VLM arch {arch!r}; choose one of {sorted(builders)}")
    torch.manual_seed(seed)
    model, processor = builders[arch](size)
    return model.eval(), processor


def save_random_vlm(
    out_dir: str | Path, arch: VLMArch = "idefics3", size: VLMSize = "tiny", seed: int = 0
) -> Path:
    """Builds a random-weight VLM (see ``build_random_vlm``) and saves model and processor to ``out_dir``."""
    model, processor = build_random_vlm(arch, size, seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def save_random_student(
    path: str | Path,
    prompt: str,
    side: int | tuple[int, int],
    num_frames: int = 4,
    width: int = 16,
    camera: str = "front",
    seed: int | None = None,
) -> Path:
    """Saves a ``scorer:learned`` file with random weights (``vlm.backends.learned``) for frames of ``side`` px
    (square) or ``(height, width)`` of ``camera`` and ``prompt``: the student's real architecture, for speed
    measurements and tests. ``seed``: seeds torch first (None: its current state)."""
    if seed is not None:
        import torch

        torch.manual_seed(seed)
    image_hw = [side, side] if isinstance(side, int) else list(side)
    meta = dict(
        camera=camera,
        image_hw=image_hw,
        num_frames=num_frames,
        width=width,
        prompt=prompt,
        prompt_hash=prompt_hash(prompt),
        labels="random",
    )
    save_learned(path, build_net(num_frames, width), meta)
    return Path(path)


def save_random_clip(out_dir: str | Path, arch: Literal["clip", "siglip"] = "clip", seed: int = 0) -> Path:
    """Builds a tiny random CLIP or SigLIP model with a BPE tokenizer and saves it with its processor."""
    import torch
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
        SiglipProcessor,
    )

    torch.manual_seed(seed)
    tok = train_bpe_tokenizer(["<|endoftext|>", "<|startoftext|>"], pad_token="<|endoftext|>")
    text = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1)
    text.update(num_attention_heads=2, max_position_embeddings=64)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    vision.update(image_size=32, patch_size=8)
    size = {"height": 32, "width": 32}
    model: Any
    if arch == "clip":
        text.update(bos_token_id=1, eos_token_id=0, pad_token_id=0)
        model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
        image_processor: Any = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size=size)
        processor: Any = CLIPProcessor(image_processor=image_processor, tokenizer=tok)
    elif arch == "siglip":
        text.update(bos_token_id=1, eos_token_id=0, pad_token_id=0)
        model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision))
        processor = SiglipProcessor(image_processor=SiglipImageProcessor(size=size), tokenizer=tok)
    else:
        raise VLMError(f"unknown contrastive arch {arch!r}; choose clip or siglip")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.eval().save_pretrained(out)
    processor.save_pretrained(out)
    return out
