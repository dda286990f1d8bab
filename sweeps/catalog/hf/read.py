"""Reading: a ``config.json`` file or dict -> ``Model``, with exact parameter counts.

Nothing is fetched from the network. Every input problem is an ``ImportModelError`` naming the
file and, where there is one, the field: a file that is not a bounded regular file, not JSON,
nested past what the JSON reader allows, or an integer too long to be a shape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sweeps.catalog.hf.count import ParamCount, count
from sweeps.catalog.hf.fields import parse_int
from sweeps.catalog.hf.shape import Shape, read_shape
from sweeps.catalog.records import Model
from sweeps.errors import ImportModelError
from sweeps.files import read_text
from sweeps.limits import NAME_MAX, name_problem, shown

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}\Z")
"""Model ids: the config files' name pattern (``sweeps.limits.NAME_PATTERN``)."""


def count_parameters(config: Mapping[str, Any], source: str = "<config>") -> ParamCount:
    """Parameters of the architecture a ``config.json`` dict describes, from its shapes.

    Parameters
    ----------
    config : The parsed ``config.json`` [mapping]
    source : Name of the file, for error messages

    Returns
    -------
    Total, active and input-embedding parameter counts [1]
    """
    return count(read_shape(config, source))


def default_name(config: Mapping[str, Any], path: str | Path | None = None) -> str:
    """A model id for a config: ``_name_or_path``'s last part, else the folder's name.

    Lower-cased and reduced to ``a-z 0-9 . _ -`` (the config files' name pattern).
    """
    raw = str(config.get("_name_or_path") or "").rstrip("/").split("/")[-1]
    if not raw and path is not None:
        p = Path(path)
        raw = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
        repo = p.parent.parent.parent.name  # hub/models--Org--Name/snapshots/<hash>/config.json
        if p.parent.parent.name == "snapshots" and repo.startswith("models--"):
            raw = repo.rsplit("--", 1)[-1]  # the repository's name, not the snapshot's hash
    name = re.sub(r"[^a-z0-9._-]+", "-", raw.lower()).strip("-._")
    name = name[:NAME_MAX].rstrip("-._")
    for marker in (".tmp-", ".old-"):  # the package's own staging folders' markers
        name = name.replace(marker, "-")
    return name or "imported"


def _attention(s: Shape) -> str:
    if s.mla.kv_lora_rank:
        return "mla"
    if s.local_layers:
        return "gqa+sliding"
    return "mha" if s.kv_heads == s.heads else "mqa" if s.kv_heads == 1 else "gqa"


def model_from_config(
    config: Mapping[str, Any], name: str | None = None, source: str = "<config>"
) -> Model:
    """The ``Model`` record of a parsed Hugging Face ``config.json``.

    Parameters
    ----------
    config : The parsed ``config.json`` [mapping]
    name : Model id; ``default_name(config)`` when None
    source : Name of the file, for error messages and the record's ``source``

    Returns
    -------
    A frozen ``Model``: shapes, vocabulary, width, tied embeddings, exact parameter counts
    [1], MoE, MLA and window facts
    """
    if not isinstance(config, Mapping):
        msg = f"{source}: a config.json must hold a JSON object, not {type(config).__name__}"
        raise ImportModelError(msg)
    s = read_shape(config, source)
    counts = count(s)
    model_id = name or default_name(config, source)
    problem = name_problem(model_id)
    if problem is not None:
        msg = f"{source}: model id {shown(model_id)} is not valid: {problem}"
        raise ImportModelError(msg)
    mlp = s.mlp
    return Model(
        id=model_id,
        params=float(counts.total),
        active_params=float(counts.active),
        layers=s.layers,
        heads=s.heads,
        kv_heads=s.kv_heads,
        head_dim=s.head_dim,
        hidden_size=s.hidden,
        intermediate_size=mlp.intermediate or mlp.moe_intermediate,
        vocab_size=s.vocab,
        attention=_attention(s),
        kv_lora_rank=s.mla.kv_lora_rank,
        qk_rope_head_dim=s.mla.qk_rope,
        v_head_dim=s.mla.v_head_dim,
        experts=mlp.experts,
        experts_per_token=mlp.experts_per_token,
        shared_experts=mlp.shared_experts,
        moe_intermediate_size=mlp.moe_intermediate if mlp.moe_layers else 0,
        sliding_window=s.sliding_window,
        local_layers=s.local_layers,
        max_context=s.max_context,
        tie_word_embeddings=s.tied,
        family=s.family.name,
        hf_repo=str(config.get("_name_or_path") or ""),
        source=f"computed from config.json shapes ({source})",
        notes="; ".join(s.notes),
    )


def _nesting_key(text: str) -> str | None:
    """The top-level key whose value nests deepest in a JSON text (None: the top level
    itself), found by one pass over brackets outside strings."""
    depth, deepest, key, last, found = 0, 0, None, "", None
    in_string = escaped = False
    start = 0
    for at, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string, last = False, text[start:at]
        elif char == '"':
            in_string, start = True, at + 1
        elif char == ":" and depth == 1:
            key = last
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest, found = depth, key if depth > 1 else None
        elif char in "]}":
            depth -= 1
            if depth == 1:
                key = None
    return found


def read_config(path: str | Path) -> dict[str, Any]:
    """Read a ``config.json`` file (a bounded regular file, see ``sweeps.files.read_text``);
    ``ImportModelError`` naming the file, and the field where one is at fault, if it is not
    a JSON object. Integer literals too long to be a shape (over 20 digits) are kept as
    ``fields.Oversized``, so the field that holds one is named when it is read."""
    path = Path(path)
    text = read_text(path, ImportModelError, "config.json")
    try:
        data = json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as error:
        msg = f"{path}: not a JSON file: {error}"
        raise ImportModelError(msg) from None
    except RecursionError:
        key = _nesting_key(text)
        where = f"field {key!r}" if key is not None else "the JSON"
        msg = f"{path}: {where} nests deeper than a config.json can; it holds flat shape fields"
        raise ImportModelError(msg) from None
    if not isinstance(data, dict):
        msg = f"{path}: a config.json must hold a JSON object, not {type(data).__name__}"
        raise ImportModelError(msg)
    return data


def load_model(path: str | Path, name: str | None = None) -> Model:
    """Read the ``config.json`` at ``path`` (or in the model folder ``path``) into a ``Model``
    (id: ``name`` or derived)."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    config = read_config(path)
    return model_from_config(config, name or default_name(config, path), str(path))
