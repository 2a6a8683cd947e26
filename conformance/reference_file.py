"""reference_file.py — the one step every conformance-reference generator ends
with: write the reference file, or with --check say whether it is stale.

A generator computes its reference data from something independent of the
extension's code (transformers' outputs, held-out data, the training corpus),
serialises it, and hands the text here:

    sys.path.insert(0, "<gufo>/conformance")   # or <prefix>/share/gufo-ext/conformance
    from reference_file import write_or_check
    write_or_check(HERE / "reference.json", json.dumps(build()), sys.argv[1:])

`python3 make_reference.py` rewrites the file; `python3 make_reference.py --check`
exits 1 naming the generator when the committed file differs from what it
would write (CI can run that), and changes nothing.
"""
import sys
from pathlib import Path


def write_or_check(out: Path, text: str, argv, generator: str = None) -> None:
    """Writes `text` (a newline is added) to `out`, or with "--check" in `argv`
    exits 1 when `out` is missing or differs."""
    text = text if text.endswith("\n") else text + "\n"
    generator = generator or Path(sys.argv[0]).name
    if "--check" in argv:
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            sys.exit(f"{out} is stale: run {generator} to rewrite it from its sources")
        print(f"{out} is up to date")
        return
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
