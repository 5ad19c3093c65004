"""Owns JSON text for the task CLI's commands: `loads` and `dumps` give exactly what
`json.loads` and `json.dumps` give, computed by `_json`, the C accelerator the json package
itself runs, without importing json, which imports re and enum: more work than the
interpreter's own start-up, paid by every command that shows a task. Malformed input is
handed to json.loads, so errors are json's own (ValueError). Where `_json` is missing, json
does everything. Does not own what the JSON means."""
from __future__ import annotations

try:
    from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner
except ImportError:  # an interpreter without the accelerator: json itself
    make_scanner = make_encoder = None


class _Decoder:
    """The attributes of json.JSONDecoder() that the C scanner reads, with their defaults."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__
    memo: dict = {}


_scan = make_scanner(_Decoder()) if make_scanner is not None else None
_BLANK = " \t\n\r"  # json.decoder.WHITESPACE


def loads(text: str) -> object:
    """json.loads(text) for a str."""
    if _scan is not None and not text.startswith("\ufeff"):
        start = len(text) - len(text.lstrip(_BLANK))
        try:
            value, end = _scan(text, start)
        # SystemError: on a syntax error inside an object, array or string the scanner raises
        # json.decoder.JSONDecodeError, which CPython 3.11 looks up in sys.modules only; with
        # json never imported it returns NULL with no exception set ('{bad' as a --result).
        except (StopIteration, ValueError, SystemError):
            pass  # json.loads below raises json's own error
        else:
            if len(text[end:].lstrip(_BLANK)) == 0:
                return value
    import json
    return json.loads(text)


def _default(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(value: object, *, ensure_ascii: bool = True, compact: bool = False) -> str:
    """json.dumps(value, ensure_ascii=ensure_ascii), with separators=(",", ":") if compact."""
    if make_encoder is None:
        import json
        return json.dumps(value, ensure_ascii=ensure_ascii,
                          separators=(",", ":") if compact else None)
    string = encode_basestring_ascii if ensure_ascii else encode_basestring
    if isinstance(value, str):
        return string(value)
    key_sep, item_sep = (":", ",") if compact else (": ", ", ")
    encode = make_encoder({}, _default, string, None, key_sep, item_sep, False, False, True)
    return "".join(encode(value, 0))


__all__ = ["loads", "dumps"]
