"""Parallel text of your own: two aligned text files, plain or gzip-compressed."""

import contextlib
import gzip
import os
import sys

from keras_luong.checks import check_path


def load_parallel_text(source_file, target_file):
    """`(sources, targets)`: the lines of two aligned text files (plain, or gzip-compressed if
    the name ends in `.gz`), line `i` of one translated by line `i` of the other.

    The end-of-line characters are dropped; nothing else is changed. The files must have the
    same number of lines and be UTF-8.

    Args:
        source_file: The source side's file, a `str` or an `os.PathLike`.
        target_file: The target side's file, with as many lines.

    Returns:
        `(sources, targets)`, two lists of strings.

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
    with open_binary(file) as f:
        for number, line in enumerate(f, 1):
            yield decode_utf8(line.rstrip(b"\n").rstrip(b"\r"), file, line=number)


def read_lines(name, file):
    """The lines of `file` as `iter_lines` reads them, or of standard input when `file` is
    `"-"` (the command lines' convention); a missing file is a `ValueError` naming `name`."""
    if file == "-":
        return [line.rstrip("\n").rstrip("\r") for line in sys.stdin]
    return list(iter_lines(check_text_file(name, file)))


def count_lines(file):
    """The number of lines of `file` (plain or gzip), counted a block at a time (a last line
    without an end-of-line character counts)."""
    count, last = 0, b"\n"
    with open_binary(file) as f:
        while block := f.read(1 << 22):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def paired(sources, targets, source_name, target_name):
    if len(sources) != len(targets):
        raise ValueError(
            "Expected the same number of lines on both sides. Received: "
            f"{len(sources)} lines in {source_name}, {len(targets)} in {target_name}"
        )
    return sources, targets


@contextlib.contextmanager
def open_binary(file):
    """`file` opened for reading bytes, decompressed if its name ends in `.gz`; a `.gz` name on
    a file that is not gzip, or a truncated gzip file, is a `ValueError` naming the file (when
    it is read)."""
    opener = gzip.open if file.endswith(".gz") else open
    try:
        with opener(file, "rb") as f:
            yield f
    except gzip.BadGzipFile:
        raise ValueError(
            f"The file {file} is named .gz but is not gzip-compressed: rename it without .gz, "
            "or compress it."
        ) from None
    except EOFError:
        raise ValueError(
            f"The file {file} ends before its gzip stream does: it is truncated (an interrupted "
            "download or copy). Fetch or copy it again."
        ) from None


def read_bytes(file):
    """The bytes of `file`, decompressed if its name ends in `.gz` (see `open_binary`)."""
    with open_binary(file) as f:
        return f.read()


def decode_utf8(content, file, line=None):
    """`content` decoded as UTF-8; anything else is a `ValueError` naming the file, the line
    if given, and the byte."""
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as error:
        where = f"line {line}, byte {error.start}" if line else f"byte {error.start}"
        raise ValueError(
            f"The file {file} is not UTF-8 text: {where} cannot be decoded "
            f"({error.reason}). Convert it, e.g. iconv -f latin1 -t utf-8."
        ) from None


def lines_of(text):
    """The lines of `text`, end-of-line characters dropped (a last empty line is no line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]
