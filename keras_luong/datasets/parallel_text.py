"""Parallel text of your own: two aligned text files, plain or gzip-compressed."""

import gzip
import os

from keras_luong.checks import check_path


def load_parallel_text(source_file, target_file):
    """`(sources, targets)`: the lines of two aligned text files (plain, or gzip-compressed if
    the name ends in `.gz`), line `i` of one translated by line `i` of the other.

    The end-of-line characters are dropped; nothing else is changed. The files must have the
    same number of lines and be UTF-8; a path may be a `str` or an `os.PathLike`.

    Example:

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "train.en"), "w") as f:
    ...     _ = f.write("a dog runs .\\ntwo cats sleep .\\n")
    >>> with open(os.path.join(folder, "train.de"), "w") as f:
    ...     _ = f.write("ein hund rennt .\\nzwei katzen schlafen .\\n")
    >>> load_parallel_text(os.path.join(folder, "train.en"), os.path.join(folder, "train.de"))
    (['a dog runs .', 'two cats sleep .'], ['ein hund rennt .', 'zwei katzen schlafen .'])
    """
    sides, names = [], []
    for name, file in (("source_file", source_file), ("target_file", target_file)):
        file = check_text_file(name, file)
        sides.append(lines_of(decode_utf8(read_bytes(file), file)))
        names.append(file)
    return paired(*sides, *names)


def check_text_file(name, file):
    """`file` as a `str`, or a `ValueError` naming `name` if it is not an existing file."""
    file = check_path(name, file)
    if not os.path.isfile(file):
        raise ValueError(
            f"Invalid value for argument {name}. Expected a text file (plain or .gz). "
            f"Received: {name}={file!r}, which does not exist"
        )
    return file


def iter_lines(file):
    """The lines of `file` (plain, or gzip if named `.gz`) one at a time, decoded as UTF-8 with
    the end-of-line characters dropped, reading a block at a time: memory does not grow with
    the file. Errors are `load_parallel_text`'s, with the line number."""
    opener = gzip.open if file.endswith(".gz") else open
    try:
        with opener(file, "rb") as f:
            for number, line in enumerate(f, 1):
                try:
                    yield line.rstrip(b"\n").rstrip(b"\r").decode("utf-8")
                except UnicodeDecodeError as error:
                    raise ValueError(
                        f"The file {file} is not UTF-8 text: line {number}, byte {error.start} "
                        f"cannot be decoded ({error.reason}). Convert it, e.g. "
                        "iconv -f latin1 -t utf-8."
                    ) from None
    except gzip.BadGzipFile:
        raise not_gzip(file) from None


def count_lines(file):
    """The number of lines of `file` (plain or gzip), counted a block at a time (a last line
    without an end-of-line character counts)."""
    opener = gzip.open if file.endswith(".gz") else open
    count, last = 0, b"\n"
    try:
        with opener(file, "rb") as f:
            while block := f.read(1 << 22):
                count += block.count(b"\n")
                last = block[-1:]
    except gzip.BadGzipFile:
        raise not_gzip(file) from None
    return count + (last != b"\n")


def paired(sources, targets, source_name, target_name):
    if len(sources) != len(targets):
        raise ValueError(
            "Expected the same number of lines on both sides. Received: "
            f"{len(sources)} lines in {source_name}, {len(targets)} in {target_name}"
        )
    return sources, targets


def read_bytes(file):
    """The bytes of `file`, decompressed if its name ends in `.gz`; a `.gz` name on a file
    that is not gzip is a `ValueError` naming the file."""
    opener = gzip.open if file.endswith(".gz") else open
    try:
        with opener(file, "rb") as f:
            return f.read()
    except gzip.BadGzipFile:
        raise not_gzip(file) from None


def decode_utf8(content, file):
    """`content` decoded as UTF-8; anything else is a `ValueError` naming the file and where."""
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"The file {file} is not UTF-8 text: byte {error.start} cannot be decoded "
            f"({error.reason}). Convert it, e.g. iconv -f latin1 -t utf-8."
        ) from None


def lines_of(text):
    """The lines of `text`, end-of-line characters dropped (a last empty line is no line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def not_gzip(file):
    return ValueError(
        f"The file {file} is named .gz but is not gzip-compressed: rename it without .gz, "
        "or compress it."
    )
