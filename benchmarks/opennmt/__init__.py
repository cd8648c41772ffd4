"""keras-luong beside OpenNMT-py 3.5.1, the same model on the same pieces and threads, in one
command with three comparisons:

    make onmt-venv   # OpenNMT-py 3.5.1 in .venv-onmt, over the project's torch
    python -m benchmarks.opennmt epochs --data ../shared/data/multi30k-en-de --corpus long
    python -m benchmarks.opennmt budget --data ../shared/data/multi30k-en-de --minutes 25
    python -m benchmarks.opennmt decode

- `epochs` (`benchmarks/opennmt/epochs.py`): learning per epoch and training speed, at equal
  epochs, in rounds whose engine order alternates;
- `budget` (`benchmarks/opennmt/budget.py`): validation BLEU per epoch, where the time goes and
  test BLEU with beam search, at an equal budget of CPU minutes;
- `decode` (`benchmarks/opennmt/decode.py`): the test split decoded again by the models a
  `budget` run saved, each engine in processes of its own, the first call (compiling
  included) and the second apart.

What they share (the arguments, the corpus and its pieces, OpenNMT-py's configuration, the
pinning and threading of each engine's process, reading OpenNMT-py's log) is in
`benchmarks/opennmt/common.py`.
"""

COMPARISONS = ("epochs", "budget", "decode")
