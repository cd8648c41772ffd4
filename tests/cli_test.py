"""The command lines `python -m keras_luong.translate`, `.evaluate` and `.train`: the same
outputs as the functions and recipe they stand for, `--help` without Keras, exit 2 on bad
input."""

import csv
import io
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_luong import (
    AttentionCallback,
    BeamSearchSampler,
    BleuCallback,
    BucketedBatches,
    Ensemble,
    GreedySampler,
    LuongSeq2Seq,
    RandomSampler,
    SequenceLoss,
    Vocabulary,
)
from keras_luong import evaluate as evaluate_cli
from keras_luong import train as train_cli
from keras_luong import translate as translate_cli
from keras_luong.data.prepared import PreparedCorpus, prepare_corpus
from keras_luong.evaluation import bleu_signature, corpus_bleu, corpus_chrf
from tests.corpora import ENGLISH, GERMAN, write
from tests.test_case import command_line

pytestmark = command_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = ["abc", "ba", "", "cabbage"]


@pytest.fixture
def saved_model(tmp_path):
    """A small model with letter vocabularies and spread-out logits, in a `.keras` file."""
    keras.utils.set_random_seed(0)
    source, target = Vocabulary("abceg"), Vocabulary("xyz")
    model = LuongSeq2Seq(len(source), len(target), units=8, embedding_dim=4)
    model.set_vocabularies(source, target)
    ids = source.encode_batch(TEXTS)
    model((ids, ids % len(target)))
    rng = np.random.default_rng(0)
    model.projection.kernel.assign(rng.normal(0, 2, (8, len(target))).astype("float32"))
    # Letters more likely than the end (2) and unknown (3) ids: outputs of a few letters.
    model.projection.bias.assign(np.array([0, 0, -2, -9, 0, 0, 0], "float32"))
    path = str(tmp_path / "model.keras")
    model.save(path)
    return path, model


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "options, sampler",
    [
        ([], "greedy"),
        (["--beam", "3", "--length-penalty", "0.6"], BeamSearchSampler(3, 0.6)),
        (["--min-length", "3", "--ban-unk"], GreedySampler(min_length=3, banned_token_ids=(3,))),
        (
            ["--beam", "2", "--min-length", "2", "--ban-unk"],
            BeamSearchSampler(2, 1.0, min_length=2, banned_token_ids=(3,)),
        ),
        (["--max-length-ratio", "0.5", "1"], "greedy"),
        (
            ["--sample", "topk:3", "--temperature", "0.8", "--seed", "5"],
            RandomSampler(top_k=3, temperature=0.8, seed=5),
        ),
        (
            ["--sample", "topp:0.9", "--seed", "6", "--ban-unk"],
            RandomSampler(top_p=0.9, seed=6, banned_token_ids=(3,)),
        ),
    ],
    ids=["greedy", "beam", "greedy-bans", "beam-bans", "length-bound", "top-k", "top-p"],
)
def test_translate_writes_what_translate_returns(saved_model, tmp_path, options, sampler):
    path, model = saved_model
    source = write_lines(tmp_path / "in.txt", TEXTS)
    output = tmp_path / "out.txt"
    argv = ["--model", path, "--input", source, "--output", str(output), *options]
    assert translate_cli.main(argv) == 0
    bound = (0.5, 1) if "--max-length-ratio" in options else (1.5, 10)
    expected = model.translate(TEXTS, sampler=sampler, length_bound=bound)
    assert output.read_text(encoding="utf-8").split("\n") == [*expected, ""]
    assert any(expected)  # the outputs compared are not all empty


def test_translate_n_best_and_json_write_translates_n_best_lists(saved_model, tmp_path):
    path, model = saved_model
    source = write_lines(tmp_path / "in.txt", TEXTS)
    output = tmp_path / "out.txt"
    argv = ["--model", path, "--input", source, "--output", str(output), "--beam", "3"]
    n_best = model.translate(TEXTS, sampler=BeamSearchSampler(3, 1.0, return_all_beams=True))
    assert translate_cli.main([*argv, "--n-best", "2"]) == 0
    lines = output.read_text(encoding="utf-8").splitlines()
    expected = [pair for best in n_best for pair in best[:2]]
    for line, (text, score) in zip(lines, expected, strict=True):
        written_score, written_text = line.split("\t")
        assert written_text == text and float(written_score) == pytest.approx(score, abs=6e-5)
    assert translate_cli.main([*argv, "--n-best", "3", "--json"]) == 0
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [r["translation"] for r in records] == [best[0][0] for best in n_best]
    for record, best in zip(records, n_best, strict=True):
        assert [e["translation"] for e in record["n_best"]] == [text for text, _ in best]
        np.testing.assert_allclose([e["score"] for e in record["n_best"]], [s for _, s in best])
    assert translate_cli.main(argv[:6] + ["--json"]) == 0  # greedy
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert records == [{"translation": text} for text in model.translate(TEXTS)]
    # Token scores: each hypothesis's tokens and their log-probabilities, as translate's.
    assert translate_cli.main([*argv, "--n-best", "2", "--json", "--token-scores"]) == 0
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    sampler = BeamSearchSampler(3, 1.0, return_all_beams=True)
    _, scored = model.translate(TEXTS, sampler=sampler, return_token_scores=True)
    for record, found in zip(records, scored, strict=True):
        assert record["tokens"] == found[0].tokens and len(record["n_best"]) == 2
        for entry, expected in zip(record["n_best"], found, strict=False):
            assert entry["tokens"] == expected.tokens
            np.testing.assert_allclose(entry["token_scores"], expected.scores, atol=6e-5)
            assert entry["end_score"] == pytest.approx(expected.end_score, abs=6e-5)
    assert translate_cli.main([*argv[:6], "--token-scores"]) == 0  # greedy, as plain text
    _, scored = model.translate(TEXTS, return_token_scores=True)
    for line, found in zip(output.read_text(encoding="utf-8").splitlines(), scored, strict=True):
        text, written = line.split(" ||| ")
        assert text == "".join(found.tokens)
        ends = [] if found.end_score is None else [found.end_score]
        expected = np.concatenate([found.scores, ends])
        np.testing.assert_allclose([float(w) for w in written.split()], expected, atol=6e-5)


def test_translate_prefix_begins_each_translation_as_translate_does(saved_model, tmp_path):
    path, model = saved_model
    source = write_lines(tmp_path / "in.txt", TEXTS)
    # The second past its text's length bound (1.5 x 2 + 10 = 13 tokens).
    prefixes = ["zz", "xyzxyzxyzxyzxyzx", "", "y"]
    output = tmp_path / "out.txt"
    argv = ["--model", path, "--input", source, "--output", str(output)]
    argv += ["--prefix", write_lines(tmp_path / "prefix.txt", prefixes)]
    assert translate_cli.main(argv) == 0
    written = output.read_text(encoding="utf-8").split("\n")[:-1]
    assert written == model.translate(TEXTS, prefixes=prefixes)
    for translation, prefix in zip(written, prefixes, strict=True):
        assert translation.startswith(prefix)
    assert written != model.translate(TEXTS)  # the prefixes changed the translations
    with pytest.raises(ValueError, match="one prefix for each of the 4 texts"):
        model.translate(TEXTS, prefixes=prefixes[:2])


def test_translate_of_several_models_is_their_ensembles(saved_model, tmp_path):
    path, model = saved_model
    keras.utils.set_random_seed(1)
    other = LuongSeq2Seq(len(model.source_vocabulary), len(model.target_vocabulary), units=4)
    other.set_vocabularies(model.source_vocabulary, model.target_vocabulary)
    other((np.ones((1, 2), "int32"), np.ones((1, 2), "int32")))
    other.save(str(tmp_path / "other.keras"))
    source = write_lines(tmp_path / "in.txt", TEXTS)
    output = tmp_path / "out.txt"
    argv = ["--model", path, str(tmp_path / "other.keras"), "--input", source]
    assert translate_cli.main([*argv, "--output", str(output), "--beam", "2"]) == 0
    expected = Ensemble([model, other]).translate(TEXTS, sampler=BeamSearchSampler(2, 1.0))
    assert output.read_text(encoding="utf-8").split("\n") == [*expected, ""]
    assert expected != model.translate(TEXTS, sampler=BeamSearchSampler(2, 1.0))


def test_translate_score_writes_each_targets_log_probability(saved_model, tmp_path):
    path, model = saved_model
    source = write_lines(tmp_path / "in.txt", TEXTS)
    targets = ["xy", "zzx", "", "y"]
    target = write_lines(tmp_path / "hyp.txt", targets)
    output = tmp_path / "scores.txt"
    argv = ["--model", path, "--input", source, "--score", target, "--output", str(output)]
    assert translate_cli.main([*argv, "--batch-size", "3"]) == 0
    written = [float(line) for line in output.read_text().split()]
    ids = [keras.utils.pad_sequences(v.encode_batch(t), padding="post") for v, t in
           ((model.source_vocabulary, TEXTS), (model.target_vocabulary, targets))]  # fmt: skip
    np.testing.assert_allclose(written, model.score(*ids), atol=6e-5)  # 4 decimals written
    assert len(set(written)) == 4
    with pytest.raises(SystemExit) as exit_:
        translate_cli.main([*argv[:4], "--score", write_lines(tmp_path / "two.txt", ["x", "y"])])
    assert exit_.value.code == 2


def test_translate_reads_stdin_and_writes_stdout(saved_model, monkeypatch, capsys):
    path, model = saved_model
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(t + "\n" for t in TEXTS)))
    assert translate_cli.main(["--model", path, "--max-length", "4"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "".join(t + "\n" for t in model.translate(TEXTS, max_length=4))
    assert captured.err == ""  # no progress bar where standard error is not a terminal


def test_translate_verbose_shows_a_progress_bar(saved_model, capsys):
    _, model = saved_model
    model.translate(TEXTS, batch_size=2, verbose=1)
    assert f"{len(TEXTS)}/{len(TEXTS)}" in capsys.readouterr().out
    with pytest.raises(ValueError, match="verbose=3"):
        model.translate(TEXTS, verbose=3)


def test_translate_alignments_and_replace_unk_write_what_translate_returns(saved_model, tmp_path):
    _, model = saved_model
    # The unknown id (3) likely between letters, so that replace-unk has tokens to replace.
    model.projection.bias.assign(np.array([0, 0, -2, 0.5, 0, 0, 0], "float32"))
    path = str(tmp_path / "unknowns.keras")
    model.save(path)
    source = write_lines(tmp_path / "in.txt", TEXTS)
    table = write_lines(tmp_path / "table.txt", ["a|||A", "b|||B"])
    output = tmp_path / "out.txt"
    argv = ["--model", path, "--input", source, "--output", str(output)]
    options = ["--alignments", "--replace-unk", "--phrase-table", table]
    assert translate_cli.main([*argv, *options]) == 0
    translations, alignments = model.translate(
        TEXTS, replace_unk=True, phrase_table=table, return_alignments=True
    )
    expected = [f"{t} ||| {a.pharaoh()}" for t, a in zip(translations, alignments, strict=True)]
    assert output.read_text(encoding="utf-8").splitlines() == expected
    # Every unknown of a text with a source replaced (the empty text has nothing to copy).
    replaced = "".join(t for t, text in zip(translations, TEXTS, strict=True) if text)
    assert "<unk>" not in replaced and ("A" in replaced or "B" in replaced)
    assert "<unk>" in "".join(model.translate(TEXTS))  # there were unknowns to replace
    # n-best as JSON: each hypothesis with its score and alignment.
    assert (
        translate_cli.main([*argv, "--beam", "2", "--n-best", "2", "--alignments", "--json"]) == 0
    )
    sampler = BeamSearchSampler(2, return_all_beams=True)
    n_best, aligned = model.translate(TEXTS, sampler=sampler, return_alignments=True)
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    for record, best, found in zip(records, n_best, aligned, strict=True):
        assert record["translation"] == best[0][0] and record["alignment"] == found[0].pharaoh()
        assert [e["alignment"] for e in record["n_best"]] == [a.pharaoh() for a in found]
        np.testing.assert_allclose([e["score"] for e in record["n_best"]], [s for _, s in best])


def test_translate_refuses_bad_input_with_exit_status_2(saved_model, tmp_path, capsys):
    path, _ = saved_model
    source = write_lines(tmp_path / "in.txt", TEXTS)
    cases = [
        (["--model", str(tmp_path / "missing.keras"), "--input", source], "no such file"),
        (["--model", source, "--input", source], "cannot load"),
        (["--model", path, "--input", str(tmp_path / "missing.txt")], "does not exist"),
        (["--model", path, "--input", source, "--beam", "0"], "--beam must be at least 1"),
        (["--model", path, "--input", source, "--min-length", "-1"], "--min-length must be"),
        (["--model", path, "--input", source, "--sample", "topk"], "topk:K"),
        (["--model", path, "--input", source, "--sample", "random", "--beam", "2"], "--beam 2"),
        (["--model", path, "--input", source, "--sample", "topp:0"], "top_p"),
        (["--model", path, "--input", source, "--beam", "2", "--n-best", "3"], "--beam 3"),
        (["--model", path, "--input", source, "--phrase-table", source], "with --replace-unk"),
        (
            ["--model", path, "--input", source, "--replace-unk", "--phrase-table", path],
            "is not UTF-8 text, a line 'source|||target' each",
        ),
        (
            ["--model", path, "--input", source, "--replace-unk", "--phrase-table", source],
            "line 1 of",
        ),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_:
            translate_cli.main(argv)
        assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_translate_of_a_model_without_vocabularies_says_so(tmp_path, capsys):
    model = LuongSeq2Seq(10, 10, units=8, embedding_dim=4)
    ids = np.ones((1, 2), "int32")
    model((ids, ids))
    model.save(tmp_path / "bare.keras")
    source = write_lines(tmp_path / "in.txt", ["a"])
    with pytest.raises(SystemExit) as exit_:
        translate_cli.main(["--model", str(tmp_path / "bare.keras"), "--input", source])
    assert exit_.value.code == 2 and "see set_vocabularies" in capsys.readouterr().err


def test_evaluate_prints_sacrebleus_scores(tmp_path, capsys):
    hypotheses = ["the cat sat on the mat .", "a dog runs"]
    first = ["the cat sat on a mat .", "a dog runs fast"]
    second = ["a cat sat on the mat .", "the dog runs"]
    hyp = write_lines(tmp_path / "hyp.txt", hypotheses)
    ref1 = write_lines(tmp_path / "ref1.txt", first)
    ref2 = write_lines(tmp_path / "ref2.txt", second)
    assert evaluate_cli.main(["--hypotheses", hyp, "--references", ref1]) == 0
    out = capsys.readouterr().out
    assert f"BLEU = {corpus_bleu(hypotheses, first, tokenize='13a'):.2f} (" in out
    assert f"chrF = {corpus_chrf(hypotheses, first):.2f}" in out
    assert f"BLEU signature: {bleu_signature('13a')}" in out
    argv = ["--hypotheses", hyp, "--references", ref1, "--references", ref2, "--tokenize", "none"]
    assert evaluate_cli.main(argv) == 0
    both = [list(pair) for pair in zip(first, second, strict=True)]
    out = capsys.readouterr().out
    assert f"BLEU = {corpus_bleu(hypotheses, both, tokenize='none'):.2f} (" in out
    assert "nrefs:2" in out and "tok:none" in out
    short = write_lines(tmp_path / "short.txt", first[:1])
    for argv, message in [
        (["--hypotheses", hyp, "--references", short], "2 hypotheses and 1 lines in"),
        (["--hypotheses", hyp, "--references", ref1, "--tokenize", "moses"], "tokenize='moses'"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            evaluate_cli.main(argv)
        assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    "module, option",
    [("translate", "--model"), ("evaluate", "--references"), ("train", "--corpus")],
)
def test_help_answers_without_keras(module, option):
    command = [sys.executable, "-X", "importtime", "-m", f"keras_luong.{module}", "--help"]
    shown = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert shown.returncode == 0 and option in shown.stdout
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in shown.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "keras_luong" in imported and not {"keras", "numpy"} & imported


def test_python_m_translate_in_a_pipe(saved_model, tmp_path):
    """The real command line, its input piped in and its output piped out: the translations
    alone (no progress bar), line for line."""
    path, model = saved_model
    run = subprocess.run(
        [sys.executable, "-m", "keras_luong.translate", "--model", path, "--beam", "2"],
        input="".join(t + "\n" for t in TEXTS),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert run.returncode == 0, run.stderr[-2000:]
    expected = model.translate(TEXTS, sampler=BeamSearchSampler(2, length_penalty=1.0))
    assert run.stdout == "".join(t + "\n" for t in expected)


@pytest.fixture
def prepared(tmp_path):
    """A corpus prepared on disk, and validation files of other sentences."""
    files = write(tmp_path / "train.en", ENGLISH * 4), write(tmp_path / "train.de", GERMAN * 4)
    prepare_corpus(*files, tmp_path / "corpus", vocabulary_size=60, verbose=0)
    valid_source = write_lines(tmp_path / "valid.en", [ENGLISH[1], "a dog sings ."])
    valid_target = write_lines(tmp_path / "valid.de", [GERMAN[1], "ein hund singt ."])
    return str(tmp_path / "corpus"), valid_source, valid_target


def the_documented_recipe(corpus_folder, valid_source, valid_target, bucket_width="auto"):
    """The translation guide's recipe written out by hand, at the test's sizes (units 8,
    embeddings 4, 2 epochs, batches of 64 tokens)."""
    corpus = PreparedCorpus(corpus_folder)
    subwords = corpus.vocabulary
    keras.utils.set_random_seed(0)
    train = BucketedBatches(corpus, tokens_per_batch=64, bucket_width=bucket_width, seed=0)
    model = LuongSeq2Seq(
        len(subwords),
        len(subwords),
        units=8,
        embedding_dim=4,
        dropout=0.3,
        initializer=keras.initializers.RandomUniform(-0.1, 0.1),
    )
    model.set_vocabularies(subwords, subwords)
    model.compile(
        keras.optimizers.Adam(2e-3, global_clipnorm=5.0), SequenceLoss(label_smoothing=0.1)
    )
    sources = [line.rstrip("\n") for line in open(valid_source, encoding="utf-8")]
    targets = [line.rstrip("\n") for line in open(valid_target, encoding="utf-8")]
    source_ids = [subwords.encode(s) for s in sources]
    target_ids = [subwords.encode(t) for t in targets]
    history = model.fit(
        train,
        validation_data=BucketedBatches(
            source_ids, target_ids, 64, bucket_width=bucket_width, shuffle=False
        ),
        epochs=2,
        callbacks=[
            AttentionCallback(
                keras.utils.pad_sequences(source_ids, padding="post"),
                keras.utils.pad_sequences([[1, *t] for t in target_ids], padding="post"),
            ),
            BleuCallback(sources, targets),
            keras.callbacks.ReduceLROnPlateau("val_loss", factor=0.5, patience=1),
            keras.callbacks.EarlyStopping(
                "val_bleu", mode="max", patience=5, restore_best_weights=True
            ),
        ],
        verbose=0,
        shuffle=False,
    )
    return model, history.history


@pytest.mark.parametrize("bucket_width", ["auto", "4", "none"])
def test_train_is_the_documented_recipe(prepared, tmp_path, bucket_width):
    """The command line trains the weights, and logs the figures, of the guide's recipe
    followed by hand, on the batches `--bucket-width` asks for (its default, "auto", is
    `BucketedBatches`'); the file it writes loads with the corpus's vocabulary and
    translates as that model does."""
    corpus, valid_source, valid_target = prepared
    out, log = str(tmp_path / "model.keras"), str(tmp_path / "log.csv")
    argv = ["--corpus", corpus, "--out", out, "--valid-source", valid_source]
    argv += ["--valid-target", valid_target, "--epochs", "2", "--units", "8"]
    argv += ["--embedding-dim", "4", "--tokens-per-batch", "64", "--log", log, "--quiet"]
    if bucket_width != "auto":
        argv += ["--bucket-width", bucket_width]
    assert train_cli.main(argv) == 0
    width = {"auto": "auto", "4": 4, "none": None}[bucket_width]
    if bucket_width == "4":  # batches of their own, so the flag shows in the figures
        shapes = [
            [
                b[0][0].shape
                for b in BucketedBatches(PreparedCorpus(corpus), None, 64, bucket_width=w)
            ]
            for w in (4, "auto")
        ]
        assert shapes[0] != shapes[1]
    model, history = the_documented_recipe(corpus, valid_source, valid_target, width)
    with open(log, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    for key in ("loss", "val_loss", "val_bleu", "val_attention_diagonal", "learning_rate"):
        logged = [float(row[key]) for row in rows]
        np.testing.assert_allclose(logged, history[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert history["loss"][1] < history["loss"][0]  # it learns
    loaded = keras.saving.load_model(out)
    for saved, trained in zip(loaded.weights, model.weights, strict=True):
        np.testing.assert_allclose(saved, trained, rtol=1e-5, atol=1e-6, err_msg=saved.path)
    assert len(loaded.source_vocabulary) == len(PreparedCorpus(corpus).vocabulary)
    assert loaded.translate(ENGLISH[:2]) == model.translate(ENGLISH[:2])


def test_train_narrows_local_ps_gaussian(prepared, tmp_path, monkeypatch):
    """`--alignment local-p` trains local-p as the seed study found it locks on: a window
    of half-width 40, σ narrowed from 40 to 5 over three epochs (40, then 20 at the second).
    The allocator is left as it is (this runs on JAX)."""
    raised = []
    monkeypatch.setattr(train_cli, "reuse_large_blocks", lambda: raised.append(1) or True)
    corpus, _, _ = prepared
    out = str(tmp_path / "local_p.keras")
    argv = ["--corpus", corpus, "--out", out, "--alignment", "local-p", "--epochs", "2"]
    argv += ["--units", "8", "--embedding-dim", "4", "--tokens-per-batch", "64", "--quiet"]
    assert train_cli.main(argv) == 0
    attention = keras.saving.load_model(out).decoder.cell.attention
    assert (attention.alignment, attention.window) == ("local-p", 40)
    assert (attention.initial_sigma, attention.final_sigma) == (40.0, 5.0)
    assert float(keras.ops.convert_to_numpy(attention.sigma_variable)) == 20.0
    assert raised == ([1] if keras.backend.backend() == "torch" else [])


@pytest.mark.parametrize("backend", ["torch", "jax", "tensorflow"])
def test_train_has_malloc_reuse_large_blocks_on_torch_only(backend, monkeypatch):
    """The command's first step on torch: glibc's malloc reusing large blocks (its return
    passed on: `False` where the C library is not glibc); on the other backends, nothing."""
    for available in (True, False):
        raised = []
        monkeypatch.setattr(
            train_cli, "reuse_large_blocks", lambda a=available, r=raised: r.append(1) or a
        )
        assert train_cli.tune_allocator(backend) is (available and backend == "torch")
        assert raised == ([1] if backend == "torch" else [])


def test_train_refuses_bad_input_with_exit_status_2(prepared, tmp_path, capsys):
    corpus, valid_source, _ = prepared
    out = str(tmp_path / "m.keras")
    cases = [
        (["--corpus", str(tmp_path), "--out", out], "has no corpus.json"),
        (["--corpus", corpus, "--out", str(tmp_path / "m.h5")], "--out must name a .keras"),
        (["--corpus", corpus, "--out", str(tmp_path / "no" / "m.keras")], "does not exist"),
        (["--corpus", corpus, "--out", out, "--valid-source", valid_source], "go together"),
        (["--corpus", corpus, "--out", out, "--epochs", "0"], "--epochs must be at least 1"),
        (["--corpus", corpus, "--out", out, "--dropout", "1.5"], "--dropout must be in [0, 1)"),
        (["--corpus", corpus, "--out", out, "--clip-norm", "0"], "--clip-norm must be positive"),
        (["--corpus", corpus, "--out", out, "--alignment", "diagonal"], "alignment='diagonal'"),
        (["--corpus", corpus, "--out", out, "--alignment", "monotonic"], "spelled 'local-m'"),
        (["--corpus", corpus, "--out", out, "--score-mode", "bahdanau"], "spelled 'additive'"),
        (["--corpus", corpus, "--out", out, "--bucket-width", "0"], "Received: 0"),
        (["--corpus", corpus, "--out", out, "--bucket-width", "wide"], "auto, none or at"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_:
            train_cli.main(argv)
        error = capsys.readouterr().err
        assert exit_.value.code == 2 and message in error, error
    assert not os.path.exists(out)  # refused before anything was trained or written


def test_one_translation_recipe_for_train_the_benchmarks_and_the_page():
    """`keras_luong.models.recipe` is the recipe: `train`'s options default to `RECIPE`, the
    benchmarks' models are `recipe_model`'s (config and compiled settings), `make translate`'s
    options default to `RECIPE`, a variant given `model_arguments` is compiled by the recipe,
    and the own-corpus guide's code writes the same numbers."""
    import re

    from keras_luong.models.recipe import RECIPE, recipe_model

    defaults = vars(train_cli.build_parser().parse_args(["--corpus", "c", "--out", "o"]))
    assert {name: defaults[name] for name in RECIPE} == RECIPE
    from benchmarks import harness

    keras.utils.set_random_seed(0)
    expected = recipe_model(40, 40)
    for model in (harness.recipe_model(40), harness.recipe_model(list(range(40)), seed=0)):
        for ours, theirs in (
            (model, expected),
            (model.optimizer, expected.optimizer),
            (model.loss, expected.loss),
        ):
            config, expected_config = ours.get_config(), theirs.get_config()
            config.pop("name", None), expected_config.pop("name", None)  # numbered by Keras
            assert config == expected_config
    from benchmarks import translate as multi30k_run

    run = vars(multi30k_run.parse_args([]))  # `make translate`: the recipe at its defaults
    assert {name: run[name] for name in RECIPE if name in run} == {
        name: RECIPE[name] for name in RECIPE if name in run
    } and {"units", "dropout", "clip_norm", "learning_rate"} <= set(run)
    variant = recipe_model(40, 40, model_arguments={"input_feeding": False})
    assert variant.get_config()["input_feeding"] is False
    assert variant.optimizer.get_config() | {"name": None} == expected.optimizer.get_config() | {
        "name": None
    }
    with open(os.path.join(ROOT, "docs", "guide", "own_corpus.md"), encoding="utf-8") as f:
        page = f.read()
    recipe = page[page.index("## The recipe in Python") :]
    code = recipe[recipe.index("```python") : recipe.index("```", recipe.index("```python") + 3)]
    for written in (
        f"units={RECIPE['units']}",
        f"embedding_dim={RECIPE['embedding_dim']}",
        f"dropout={RECIPE['dropout']}",
        f"RandomUniform(-{RECIPE['init_scale']}, {RECIPE['init_scale']})",
        f"global_clipnorm={RECIPE['clip_norm']}",
        f"label_smoothing={RECIPE['label_smoothing']}",
    ):
        assert written in code, written
    assert re.search(r"Adam\(2e-3,", code) and RECIPE["learning_rate"] == 2e-3
