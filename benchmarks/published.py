"""Published results the benchmarks print beside their own."""

# Multi30k: results on test2016, as `(system, direction, BLEU, text scored)`.
MULTI30K = (
    (
        "LIUM-CVC monomodal NMT, conditional GRU 256 + attention, joint BPE 10k, single run",
        "En→De",
        39.00,
        "lc.norm.tok, multi-bleu",
    ),
    (
        "Bahdanau-attention GRU, biGRU 512 (bentrevett/pytorch-seq2seq 3)",
        "De→En",
        28.30,
        "lowercased, spaCy-tokenized",
    ),
    (
        "Transformer, 9.0M parameters (bentrevett/pytorch-seq2seq 6)",
        "De→En",
        36.52,
        "lowercased, spaCy-tokenized",
    ),
)

# CMUdict g014b2b split: the published rows (PER %, WER %).
CMUDICT = (
    ("Yao & Zweig 2015, bi-LSTM (with alignments)", 5.45, 23.55),
    ("Rao et al. 2015, LSTM + n-gram FST", None, 21.3),
    ("Toshniwal & Livescu 2016, Luong global attention, biLSTM encoder (3x512)", 5.04, 21.69),
    ("Toshniwal & Livescu 2016, ensemble", 4.69, 20.24),
    ("Yolchuyeva et al. 2019, Transformer 4x4", 5.23, 22.10),
    ("g2p-seq2seq (CMU Sphinx), 2x512 LSTM", None, 23.3),
)

# Luong, Pham and Manning 2015, Table 1 (WMT'14 English→German, newstest2014): the rows before
# and after input feeding, as `(system, perplexity, BLEU)`.
LUONG_2015_INPUT_FEEDING = (
    ("Base + reverse + dropout + global attention (location)", 7.3, 16.8),
    ("Base + reverse + dropout + global attention (location) + feed input", 6.4, 18.1),
)
