#!/usr/bin/env python3
"""Split the generated files of this vendored crate that are longer than LIMIT
lines into fragments of whole top-level items, joined back with `include!`.

Why: Baton keeps every file it carries under ~800 lines. The generator writes
one file per message, holding the message struct and every struct nested in
it, and one file (messages.rs) with the dispatch over all messages; several of
those run past the limit. The seam used is the generator's own: a top-level
item (a struct with its impls, a nested struct, an enum). Each fragment holds
whole items, in their original order, and is textually included where it stood,
so the module, its items and their order are exactly what the generator wrote.

Run it after copying in a new release and re-applying PATCHES.md; it is
idempotent (a file already split is left alone) and touches nothing under the
limit. `--check` exits 1 if a file would be split (used by nothing at build
time; the build needs only the files)."""

import pathlib
import re
import sys

LIMIT = 800
FULL = 700
ROOT = pathlib.Path(__file__).resolve().parent / "src"
END_OF_ITEM = re.compile(r"^\}\s*;?\s*$")


def chunks(lines):
    """Cut points after top-level items' closing braces: each fragment ends at the last
    item boundary before it would pass FULL lines (an item longer than that stays whole)."""
    cuts, start, last = [], 0, None
    for i, line in enumerate(lines):
        if END_OF_ITEM.match(line) and i + 1 < len(lines) and lines[i + 1].strip() == "":
            if i + 1 - start > FULL and last is not None:
                cuts.append(last)
                start = last
            last = i + 1
    if len(lines) - start > FULL and last is not None and last > start:
        cuts.append(last)
    return cuts


def split(path, check):
    text = path.read_text()
    if ".part" in path.name or "include!(\"" + path.stem + ".part" in text:
        return False
    lines = text.split("\n")
    if len(lines) <= LIMIT:
        return False
    cuts = chunks(lines)
    if not cuts:
        raise SystemExit(f"{path}: no top-level item boundary to split at")
    if check:
        return True
    bounds = [0] + cuts + [len(lines)]
    head = lines[: bounds[1]]
    includes = []
    for n, (a, b) in enumerate(zip(bounds[1:], bounds[2:]), start=2):
        part = lines[a:b]
        while part and part[0].strip() == "":
            part = part[1:]
        name = f"{path.stem}.part{n}.rs"
        note = f"// Part {n} of {path.name}, split by split_long_files.py at item boundaries; generated code.\n"
        (path.parent / name).write_text(note + "\n".join(part).rstrip("\n") + "\n")
        includes.append(f'include!("{name}");')
    path.write_text("\n".join(head).rstrip("\n") + "\n\n" + "\n".join(includes) + "\n")
    return True


def main():
    check = "--check" in sys.argv[1:]
    done = [p for p in sorted(ROOT.rglob("*.rs")) if split(p, check)]
    for p in done:
        print(("would split " if check else "split ") + str(p.relative_to(ROOT.parent)))
    if check and done:
        sys.exit(1)


if __name__ == "__main__":
    main()
