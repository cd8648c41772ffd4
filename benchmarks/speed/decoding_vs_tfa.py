"""Decoding speed against tensorflow-addons 0.23: greedy and beam search, side by side.

    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.speed decoding_vs_tfa [--batch 64] \
        [--rounds 5] [--tfa-python .venv-tfa/bin/python]

The same model on both sides, at the sizes of the comparison in the issue tracker: B sources of
length 30, an embedding of 64, a biLSTM encoder (2 x 128), tanh bridges to the decoder's
initial states, an input-feeding LSTM decoder of 256 units with Luong's general score and
`h̃ = tanh(W_c [c; h])`, a vocabulary of 8000, 30 decoding steps, beam 5. Both sides run
every step: the end token's logit is pushed to -1e9, so no hypothesis ends (keras-luong with
`stop_token_ids=None`), and tensorflow-addons stops at `maximum_iterations=30`.

- keras-luong: `LuongSeq2Seq.generate` with `GreedySampler` / `BeamSearchSampler(5)` (compiled
  on JAX and with XLA on TensorFlow; eager on torch).
- tensorflow-addons (TensorFlow 2.15 in its own venv, see tests/tfa_parity/__init__.py): the same
  layers, `BasicDecoder` + `GreedyEmbeddingSampler` and `BeamSearchDecoder(beam_width=5)` over
  `AttentionWrapper(LSTMCell, LuongAttention)`, in a `tf.function` (graph) and a
  `tf.function(jit_compile=True)` (XLA), as a worker process.

The rounds interleave: each round times every side once (the mean of `--calls` calls), so the
ratios share one time window; medians over the rounds are printed, with each setting's time
over tensorflow-addons' graph and XLA times. `--json FILE` writes the results file a page
quotes (`figures_of`).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

EMBEDDING, SOURCE, STEPS, UNITS, VOCABULARY, BEAMS = 64, 30, 30, 256, 8000, 5
END = VOCABULARY - 1  # never generated: its logit is pushed to -1e9 on both sides


def sources(batch):
    return np.random.default_rng(0).integers(3, END, (batch, SOURCE)).astype("int32")


def tensorflow_addons_worker(batch, calls):
    """Run in the tensorflow-addons venv. Prints READY once compiled; then for each line
    `<name>` on stdin (`greedy-graph`, `greedy-xla`, `beam-graph`, `beam-xla`) prints the mean
    seconds of `calls` calls."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import tensorflow_addons as tfa

    tf.random.set_seed(0)
    source_embedding = tf.keras.layers.Embedding(VOCABULARY, EMBEDDING)
    target_embedding = tf.keras.layers.Embedding(VOCABULARY, EMBEDDING)
    encoder = tf.keras.layers.Bidirectional(
        tf.keras.layers.LSTM(UNITS // 2, return_sequences=True, return_state=True)
    )
    bridge_h = tf.keras.layers.Dense(UNITS, "tanh")
    bridge_c = tf.keras.layers.Dense(UNITS, "tanh")
    mechanism = tfa.seq2seq.LuongAttention(UNITS)
    cell = tfa.seq2seq.AttentionWrapper(
        tf.keras.layers.LSTMCell(UNITS),
        mechanism,
        attention_layer=tf.keras.layers.Dense(UNITS, "tanh", use_bias=False),
    )
    projection = tf.keras.layers.Dense(VOCABULARY)
    projection.build((None, UNITS))
    projection.bias.assign(tf.tensor_scatter_nd_update(projection.bias, [[END]], [-1e9]))
    target_embedding.build((None,))
    greedy_decoder = tfa.seq2seq.BasicDecoder(
        cell,
        tfa.seq2seq.GreedyEmbeddingSampler(target_embedding),
        output_layer=projection,
        maximum_iterations=STEPS,
    )
    beam_decoder = tfa.seq2seq.BeamSearchDecoder(
        cell,
        beam_width=BEAMS,
        output_layer=projection,
        embedding_fn=target_embedding,
        maximum_iterations=STEPS,
    )

    def encode(source, copies):
        memory, forward_h, forward_c, backward_h, backward_c = encoder(source_embedding(source))
        h = bridge_h(tf.concat([forward_h, backward_h], -1))
        c = bridge_c(tf.concat([forward_c, backward_c], -1))
        if copies > 1:
            memory, h, c = (tfa.seq2seq.tile_batch(x, copies) for x in (memory, h, c))
        mechanism.setup_memory(memory)
        rows = tf.shape(h)[0]
        return cell.get_initial_state(batch_size=rows, dtype=tf.float32).clone(cell_state=[h, c])

    def greedy(source):
        state = encode(source, 1)
        start = tf.fill([tf.shape(source)[0]], 1)
        outputs, _, _ = greedy_decoder(None, initial_state=state, start_tokens=start, end_token=END)
        return outputs.sample_id

    def beam(source):
        state = encode(source, BEAMS)
        start = tf.fill([tf.shape(source)[0]], 1)
        outputs, _, _ = beam_decoder(None, initial_state=state, start_tokens=start, end_token=END)
        return outputs.predicted_ids

    source = tf.constant(sources(batch))
    functions = {
        "greedy-graph": tf.function(greedy),
        "greedy-xla": tf.function(greedy, jit_compile=True),
        "beam-graph": tf.function(beam),
        "beam-xla": tf.function(beam, jit_compile=True),
    }
    for name, function in functions.items():
        ids = function(source).numpy()
        steps = ids.shape[1]
        if steps != STEPS:
            sys.exit(f"{name} ran {steps} steps, not {STEPS}")
    print(f"READY {tf.__version__} {tfa.__version__}", flush=True)
    for line in sys.stdin:
        function = functions[line.strip()]
        start = time.perf_counter()
        for _ in range(calls):
            function(source).numpy()
        print((time.perf_counter() - start) / calls, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3, help="calls per sample")
    parser.add_argument(
        "--tfa-python", default=os.environ.get("TFA_PYTHON", ".venv-tfa/bin/python")
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    parser.add_argument("--tfa-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tfa_worker:
        tensorflow_addons_worker(args.batch, args.calls)
        return

    import keras

    from keras_luong import BeamSearchSampler, GreedySampler, LuongSeq2Seq

    worker = subprocess.Popen(
        [args.tfa_python, "-m", __spec__.name, "--tfa-worker"]
        + ["--batch", str(args.batch), "--calls", str(args.calls)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=""),
    )

    keras.utils.set_random_seed(0)
    source = sources(args.batch)
    model = LuongSeq2Seq(VOCABULARY, VOCABULARY, units=UNITS, embedding_dim=EMBEDDING)
    model((source[:1], source[:1, :2]))
    bias = keras.ops.convert_to_numpy(model.projection.bias)
    bias[END] = -1e9
    model.projection.bias.assign(bias)
    ours = {"greedy": GreedySampler(), "beam": BeamSearchSampler(BEAMS)}

    def run(sampler):
        return model.generate(source, STEPS, sampler=sampler, stop_token_ids=None)

    for sampler in ours.values():
        if run(sampler).shape != (args.batch, STEPS):
            sys.exit("keras-luong did not run every step")
    ready, *versions = worker.stdout.readline().split() or [""]
    if ready != "READY":
        sys.exit("the tensorflow-addons worker failed")

    def tfa_time(name):
        worker.stdin.write(name + "\n")
        worker.stdin.flush()
        return float(worker.stdout.readline())

    times = {}
    for _ in range(args.rounds):
        for kind, sampler in ours.items():
            start = time.perf_counter()
            for _ in range(args.calls):
                run(sampler)
            times.setdefault(f"{kind} keras-luong", []).append(
                (time.perf_counter() - start) / args.calls
            )
            for mode in ("graph", "xla"):
                times.setdefault(f"{kind} tfa {mode}", []).append(tfa_time(f"{kind}-{mode}"))
    worker.stdin.close()
    worker.wait()
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(
        f"keras-luong ({keras.backend.backend()}) vs tensorflow-addons 0.23: B={args.batch}, "
        f"S={SOURCE}, {STEPS} steps, {UNITS} units, vocabulary {VOCABULARY}, beam {BEAMS}; "
        f"medians of {args.rounds} interleaved rounds of {args.calls} calls"
    )
    figures = figures_of(medians)
    for kind in ours:
        print(
            f"{kind:6s} keras-luong {figures[kind]:>8} ms   tfa graph "
            f"{figures[f'{kind}_tfa_graph']:>8} ms   tfa XLA {figures[f'{kind}_tfa_xla']:>8} ms"
            f"   ours/graph {figures[f'{kind}_over_graph']:>5}   ours/XLA "
            f"{figures[f'{kind}_over_xla']:>5}   ours/fastest {figures[f'{kind}_over_fastest']:>5}"
        )
    if args.json:
        from benchmarks import harness

        settings = harness.settings_of(args, "batch", "rounds", "calls")
        settings["tensorflow"], settings["tensorflow_addons"] = versions
        harness.write_figures(args.json, figures, settings)


def figures_of(medians):
    """The medians (seconds, keyed `"<greedy|beam> keras-luong"`, `"... tfa graph"`, `"... tfa
    xla"`) as the page quotes them: for each sampler keras-luong's ms (`greedy`), tfa's
    (`greedy_tfa_graph`, `greedy_tfa_xla`) and keras-luong's time over each and over the faster
    (`greedy_over_fastest`)."""
    figures = {}
    for kind in ("greedy", "beam"):
        ours, graph, xla = (
            medians[f"{kind} {side}"] for side in ("keras-luong", "tfa graph", "tfa xla")
        )
        figures[kind] = f"{1e3 * ours:.1f}"
        for mode, tfa in (("graph", graph), ("xla", xla), ("fastest", min(graph, xla))):
            if mode != "fastest":
                figures[f"{kind}_tfa_{mode}"] = f"{1e3 * tfa:.1f}"
            figures[f"{kind}_over_{mode}"] = f"{ours / tfa:.2f}"
    return figures


if __name__ == "__main__":
    main()
