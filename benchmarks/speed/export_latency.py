"""Latency of the exported decoding loop in each runtime against `generate`, and the
artifacts' sizes, in one process: on TensorFlow the SavedModel, the ONNX file and the LiteRT
file, on torch the `torch.export` program and the ONNX file written from it (LiteRT and
torch's unrolled: `max_length` steps, sources padded to 30 tokens).

    KERAS_BACKEND=tensorflow .venv/bin/python -m benchmarks.speed export_latency
    KERAS_BACKEND=torch .venv/bin/python -m benchmarks.speed export_latency

`LuongSeq2Seq(8000, 8000, units=256, embedding_dim=128)` (global general attention, input
feeding; the translation page's model) with seeded weights (the output layer's drawn from a
normal of σ 1, so that no near-tie between tokens breaks differently under two runtimes'
rounding and fails the ids check) is exported with greedy and with beam 5 (length penalty
1.0), `max_length=40`, in the backend's formats. Each runtime decodes one sentence of 20
tokens and a batch of 64 sentences of 10-30 tokens (padded), in rounds whose order
alternates; it prints the medians, the ratio of each runtime to `generate`
(below 1: faster) and checks that every runtime's ids equal `generate`'s.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

from benchmarks.harness import interleaved_medians

# decoding name -> sampler (keras_luong.BeamSearchSampler's arguments for beam search)
DECODINGS = {"greedy": None, "beam 5": {"num_beams": 5, "length_penalty": 1.0}}
MAX_LENGTH = 40
SOURCE_LENGTH = 30  # the unrolled artifacts' source length: the longest source here


def sources():
    rng = np.random.default_rng(0)
    one = rng.integers(4, 8000, (1, 20)).astype("int32")
    lengths = rng.integers(10, 31, 64)
    batch = np.zeros((64, 30), "int32")
    for row, length in enumerate(lengths):
        batch[row, :length] = rng.integers(4, 8000, length)
    return {"1 sentence": one, "64 sentences": batch}


def size_of(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, files in os.walk(path) for f in files)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3, help="calls per runtime and round")
    parser.add_argument(
        "--decoding", choices=list(DECODINGS), action="append", help="default: every one"
    )
    args = parser.parse_args()
    import keras

    import keras_luong
    from keras_luong import LuongSeq2Seq

    if keras.backend.backend() not in ("tensorflow", "torch"):
        sys.exit("Run with KERAS_BACKEND=tensorflow (SavedModel, ONNX, LiteRT) or torch.")
    keras.utils.set_random_seed(0)
    model = LuongSeq2Seq(8000, 8000, units=256, embedding_dim=128)
    data = sources()
    model((data["1 sentence"], data["1 sentence"]))
    rng = np.random.default_rng(0)
    model.projection.kernel.assign(rng.normal(0, 1, (256, 8000)).astype("float32"))
    with tempfile.TemporaryDirectory() as folder:
        for name in args.decoding or DECODINGS:
            beam = DECODINGS[name]
            sampler = "greedy" if beam is None else keras_luong.BeamSearchSampler(**beam)
            time_decoding(model, name, {"sampler": sampler}, data, folder, args)


def tensorflow_runtimes(model, name, decoding, folder):
    """The SavedModel, the ONNX file and the LiteRT file, each loaded in its runtime, and
    their sizes."""
    import onnxruntime
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    saved = os.path.join(folder, name.replace(" ", "") + "_savedmodel")
    onnx = os.path.join(folder, name.replace(" ", "") + ".onnx")
    model.export_generator(saved, MAX_LENGTH, **decoding)
    model.export_generator(onnx, MAX_LENGTH, format="onnx", **decoding)
    loaded = tf.saved_model.load(saved)  # kept: its variables die with it
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    session = onnxruntime.InferenceSession(onnx, options)
    feed = session.get_inputs()[0].name
    litert = os.path.join(folder, name.replace(" ", "") + ".tflite")
    model.export_generator(
        litert, MAX_LENGTH, format="litert", source_length=SOURCE_LENGTH, **decoding
    )
    interpreter = Interpreter(model_path=litert, num_threads=os.cpu_count())
    litert_input = interpreter.get_input_details()[0]["index"]

    def run_litert(source):
        padded = np.pad(source, [(0, 0), (0, SOURCE_LENGTH - source.shape[1])])
        interpreter.resize_tensor_input(litert_input, padded.shape)
        interpreter.allocate_tensors()
        interpreter.set_tensor(litert_input, padded)
        interpreter.invoke()
        return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])

    runtimes = {
        "SavedModel": lambda s: loaded.serve(tf.constant(s)).numpy(),
        "onnxruntime": lambda s: session.run(None, {feed: s})[0],
        "LiteRT": run_litert,
    }
    sizes = {"SavedModel": size_of(saved), "ONNX": size_of(onnx), "LiteRT": size_of(litert)}
    return runtimes, sizes


def torch_runtimes(model, name, decoding, folder):
    """The `torch.export` program, loaded by torch, and the ONNX file written from torch, run
    by onnxruntime; their sizes, and their export times printed."""
    import time

    import onnxruntime
    import torch

    paths = {}
    for format, suffix in (("torch", ".pt2"), ("onnx", ".onnx")):
        paths[format] = os.path.join(folder, name.replace(" ", "") + suffix)
        start = time.perf_counter()
        model.export_generator(
            paths[format], MAX_LENGTH, format=format, source_length=SOURCE_LENGTH, **decoding
        )
        print(f"\n{name}: {format} export {time.perf_counter() - start:.0f} s")
    program = torch.export.load(paths["torch"]).module()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    session = onnxruntime.InferenceSession(paths["onnx"], options)

    def padded(source):
        return np.pad(source, [(0, 0), (0, SOURCE_LENGTH - source.shape[1])])

    def run(source):
        with torch.no_grad():
            return program(torch.from_numpy(padded(source))).numpy()

    runtimes = {
        "torch.export": run,
        "onnxruntime": lambda s: session.run(None, {"source": padded(s)})[0],
    }
    sizes = {"torch.export": size_of(paths["torch"]), "ONNX": size_of(paths["onnx"])}
    return runtimes, sizes


def time_decoding(model, name, decoding, data, folder, args):
    """One decoding setting: exported in the backend's formats, checked against
    `generate`, then timed."""
    import keras

    exported = tensorflow_runtimes if keras.backend.backend() == "tensorflow" else torch_runtimes
    artifacts, sizes = exported(model, name, decoding, folder)
    runtimes = {"generate": lambda s: model.generate(s, max_length=MAX_LENGTH, **decoding)}
    runtimes.update(artifacts)
    for source in data.values():
        expected = runtimes["generate"](source)
        for runtime, run in runtimes.items():
            np.testing.assert_array_equal(run(source), expected, err_msg=runtime)
    versions = {
        runtime: {case: (lambda r=run, s=source: r(s)) for case, source in data.items()}
        for runtime, run in runtimes.items()
    }
    medians = interleaved_medians(versions, list(data), args.rounds, args.calls)
    print(f"\n{name}, max_length {MAX_LENGTH}: medians of {args.rounds} rounds of {args.calls}")
    print(f"{'case':<14} " + " ".join(f"{r + ' ms':>16}" for r in runtimes) + "  ratio to generate")
    for case in data:
        base = medians[("generate", case)]
        row = " ".join(f"{medians[(r, case)] * 1e3:16.1f}" for r in runtimes)
        ratios = " ".join(f"{medians[(r, case)] / base:.2f}" for r in list(runtimes)[1:])
        print(f"{case:<14} {row}  {ratios}")
    print("sizes: " + ", ".join(f"{kind} {size / 1e6:.1f} MB" for kind, size in sizes.items()))


if __name__ == "__main__":
    main()
