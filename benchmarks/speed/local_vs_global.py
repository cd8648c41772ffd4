"""Forward+backward time of LocalAttention(predictive) and GlobalAttention as S grows.

    KERAS_BACKEND=jax python -m benchmarks.speed local_vs_global [--batch 8] [--dim 128] \
        [--json docs/results/local_vs_global.json]

Prints, from one run on the current backend, the time of one forward+backward pass of each
layer for S = 256 ... 16384 (T = 64, D = 10), then two ratios:
  flatness = local time at the largest S / local time at the smallest S   (goal: <= 1.5)
  speed-up = global time / local time at the largest S                    (goal: >= 10)
The gradient is taken with respect to the layer's weights and the query (the decoder side);
`--value-grad` also differentiates the encoder states, whose gradient is O(S) by nature.
JAX and TensorFlow run compiled (jit); torch runs eagerly. `--eager` times instead the layer
called directly, uncompiled and forward only, on a memory prepared once per source
(`layer.prepare(value)`), as a step-by-step decoder calls it.

The score is "dot" by default, so that neither side projects anything: with "general" the
global layer projects all S keys (`W_a h̄_s`, what a decoder wants, once per source) while
local attention projects the T queries, which for T < S makes global look slower than its
cheaper form would be. `--score general` measures that case too.

`--json FILE` writes the results file a page quotes: a row for each S (the times in ms), and
the figures `local_<S>`, `global_<S>`, `flatness` and `speedup`. Run nothing else beside it.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks import harness  # noqa: E402
from keras_luong import GlobalAttention, LocalAttention  # noqa: E402

COLUMNS = [("S", "S"), ("local", "local"), ("global", "global")]


def make_step(layer, query, value, value_grad):
    """A compiled function running one forward+backward pass; returns a callable."""
    backend = keras.backend.backend()
    layer(query, value)
    if backend == "jax":
        import jax

        trainable = [v.value for v in layer.trainable_variables]
        argnums = (0, 1, 2) if value_grad else (0, 1)

        def loss(trainable, q, v):
            out, _ = layer.stateless_call(trainable, [], q, v)
            return jax.numpy.sum(out * out)

        grad = jax.jit(jax.grad(loss, argnums=argnums))
        q, v = jax.numpy.asarray(query), jax.numpy.asarray(value)
        return lambda: jax.block_until_ready(grad(trainable, q, v))
    if backend == "tensorflow":
        import tensorflow as tf

        q, v = tf.constant(query), tf.constant(value)

        @tf.function(jit_compile=True)
        def grad():
            with tf.GradientTape() as tape:
                tape.watch([q, v])
                out = layer(q, v)
                loss = tf.reduce_sum(out * out)
            sources = layer.trainable_variables + [q] + ([v] if value_grad else [])
            return tape.gradient(loss, sources)

        return lambda: [g.numpy() for g in grad()]
    import torch

    q = torch.tensor(query, requires_grad=True)
    v = torch.tensor(value, requires_grad=value_grad)

    def grad():
        out = layer(q, v)
        (out * out).sum().backward()
        return q.grad

    return grad


def make_call(layer, query, value):
    """The layer called eagerly, forward only, on a memory prepared once (as a decoder calls
    it step after step); returns a callable."""
    layer(query, value)
    memory = layer.prepare(value)
    return lambda: keras.ops.convert_to_numpy(layer(query, memory=memory))


def measure(step, repeats):
    for _ in range(2):  # compile and warm up
        step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--sources", type=int, nargs="+", default=[256, 1024, 4096, 16384])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--value-grad", action="store_true")
    parser.add_argument("--eager", action="store_true", help="direct eager forward calls")
    parser.add_argument("--score", default="dot", choices=["dot", "general", "concat"])
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    query = rng.standard_normal((args.batch, args.steps, args.dim)).astype("float32")
    what = "eager forward calls" if args.eager else "gradient w.r.t. weights + query"
    what += " + value" if args.value_grad and not args.eager else ""
    print(
        f"backend {keras.backend.backend()}, B={args.batch}, T={args.steps}, d={args.dim}, "
        f"D={args.window}, score {args.score!r}, {what}"
    )
    print(f"{'S':>7} {'local ms':>10} {'global ms':>10} {'global/local':>13}")
    local_times, global_times = [], []
    for source_length in args.sources:
        value = rng.standard_normal((args.batch, source_length, args.dim)).astype("float32")
        keras.utils.set_random_seed(0)
        local = LocalAttention(alignment="local-p", window=args.window, score_mode=args.score)
        global_ = GlobalAttention(score_mode=args.score)
        if args.eager:
            steps = [make_call(layer, query, value) for layer in (local, global_)]
        else:
            steps = [make_step(layer, query, value, args.value_grad) for layer in (local, global_)]
        local_times.append(measure(steps[0], args.repeats))
        global_times.append(measure(steps[1], args.repeats))
        print(
            f"{source_length:>7} {1e3 * local_times[-1]:>10.2f} {1e3 * global_times[-1]:>10.2f} "
            f"{global_times[-1] / local_times[-1]:>13.1f}"
        )
    flatness = local_times[-1] / local_times[0]
    speedup = global_times[-1] / local_times[-1]
    print(
        f"flatness  local(S={args.sources[-1]}) / local(S={args.sources[0]}) = {flatness:.2f}"
        f"  (goal <= 1.5: {'met' if flatness <= 1.5 else 'NOT met'})"
    )
    print(
        f"speed-up  global / local at S={args.sources[-1]} = {speedup:.1f}"
        f"  (goal >= 10: {'met' if speedup >= 10 else 'NOT met'})"
    )
    if args.json:
        write_json(args, local_times, global_times)


def write_json(args, local_times, global_times):
    """The results file: a row per S (times as the page shows them, `2.15 ms`) and the
    figures by name (`local_256`, `global_16384`, `flatness`, `speedup`)."""
    rows, figures = [], {}
    for size, local, global_ in zip(args.sources, local_times, global_times, strict=True):
        rows.append({"S": str(size), "local": f"{1e3 * local:.2f} ms"})
        rows[-1]["global"] = f"{1e3 * global_:.2f} ms"
        figures[f"local_{size}"] = f"{1e3 * local:.2f}"
        figures[f"global_{size}"] = f"{1e3 * global_:.2f}"
    figures["flatness"] = f"{local_times[-1] / local_times[0]:.2f}"
    figures["speedup"] = f"{global_times[-1] / local_times[-1]:.1f}"
    settings = harness.settings_of(args, "batch", "steps", "dim", "window", "score", "eager")
    harness.write_results(args.json, rows, columns=COLUMNS, figures=figures, settings=settings)


if __name__ == "__main__":
    main()
