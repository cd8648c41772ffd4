"""On torch, how does keras-luong compare with the same model written in plain PyTorch?

    KERAS_BACKEND=torch python -m benchmarks.speed plain_torch [--rounds 9] [--calls 1] \
        [--threads 2] [--json FILE]

`PlainLuong` is `LuongSeq2Seq(V, V, units=256, embedding_dim=128)` (a biLSTM encoder, the
learned tanh bridge, global attention with the general score, input feeding) as a PyTorch user
writes it: `nn.LSTM` over packed sequences, `nn.LSTMCell`, `baddbmm` scores, `addmm` logits.
`from_keras` copies a built model's weights into it by role, and the test suite checks that
the two give the same teacher-forced logits and decode the same ids.

Timed side by side, in interleaved rounds (`benchmarks.harness.interleaved_medians`):

- greedy decoding and beam search (5 beams, the best hypothesis kept), batch 64 and batch 1:
  sources of length 30 right-padded to 15-30 tokens, vocabulary 8000, all 30 steps on both
  sides (`stop_token_ids=None`); the output kernel is scaled by 50 on both sides, so that
  an untrained model's logits are not near-ties that rounding breaks either way;
- one train step at batch 64, source and target length 50, vocabulary 1000: keras-luong's
  `train_on_batch` against forward, cross-entropy, backward and `torch.optim.Adam.step()`
  (Adam 1e-3 on both).

`--threads` sets torch's threads (2 by default; with anything else running on a 2-core
machine, 1). `--json FILE` writes the results file a page quotes: each case's ratio
(`greedy_64_over_plain_pytorch`) and its times.
"""

import argparse

import keras
import numpy as np

from benchmarks import harness
from keras_luong import BeamSearchSampler, GreedySampler, LuongSeq2Seq

START = 1
NEVER = -1e9  # the logit of an id that is never generated (padding, the start token)


def plain_luong_class():
    """`PlainLuong`, defined on first use (importing this module needs no torch)."""
    import torch
    from torch import nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    class PlainLuong(nn.Module):
        """Luong's global attention, general score and input feeding in plain PyTorch:

        h̄ = BiLSTM(embed(x)),  h_0 = tanh(W_h [h→; h←] + b),  c_0 = tanh(W_c' [c→; c←] + b)
        h_t, c_t = LSTMCell([embed(y_{t-1}); h̃_{t-1}], (h_{t-1}, c_{t-1}))
        a_t = softmax(h_t · W_a h̄ + mask),  c_t = a_t h̄,  h̃_t = tanh(W_c [c_t; h_t])
        logits = W_s h̃_t + b_s
        """

        def __init__(self, vocabulary, units, embedding):
            super().__init__()
            self.vocabulary, self.units = vocabulary, units
            self.source_embedding = nn.Embedding(vocabulary, embedding)
            self.encoder = nn.LSTM(embedding, units // 2, batch_first=True, bidirectional=True)
            self.bridge_h = nn.Linear(units, units)
            self.bridge_c = nn.Linear(units, units)
            self.target_embedding = nn.Embedding(vocabulary, embedding)
            self.cell = nn.LSTMCell(embedding + units, units)
            self.key = nn.Linear(units, units, bias=False)
            self.attentional = nn.Linear(2 * units, units, bias=False)
            self.projection = nn.Linear(units, vocabulary)
            never = torch.zeros(vocabulary)
            never[0] = never[START] = NEVER
            self.register_buffer("never", never, persistent=False)

        def encode(self, source):
            """`(value, keys, mask, h, c)` of right-padded source ids `(B, S)`."""
            lengths = (source != 0).sum(1).cpu()
            packed = pack_padded_sequence(
                self.source_embedding(source), lengths, batch_first=True, enforce_sorted=False
            )
            outputs, (h, c) = self.encoder(packed)
            value, _ = pad_packed_sequence(outputs, batch_first=True, total_length=source.shape[1])
            h = torch.tanh(self.bridge_h(torch.cat([h[0], h[1]], -1)))
            c = torch.tanh(self.bridge_c(torch.cat([c[0], c[1]], -1)))
            mask = torch.zeros(source.shape, dtype=value.dtype).masked_fill(source == 0, NEVER)
            return value, self.key(value), mask, h, c

        def step(self, embedded, h, c, feed, value, keys, mask):
            h, c = self.cell(torch.cat([embedded, feed], -1), (h, c))
            scores = torch.baddbmm(mask.unsqueeze(1), h.unsqueeze(1), keys.transpose(1, 2))
            context = torch.bmm(torch.softmax(scores, -1), value).squeeze(1)
            return h, c, torch.tanh(self.attentional(torch.cat([context, h], -1)))

        def forward(self, source, target_in):
            """Teacher-forced logits `(B, T, V)`."""
            value, keys, mask, h, c = self.encode(source)
            feed = value.new_zeros(source.shape[0], self.units)
            outputs = []
            for embedded in self.target_embedding(target_in).unbind(1):
                h, c, feed = self.step(embedded, h, c, feed, value, keys, mask)
                outputs.append(feed)
            return self.projection(torch.stack(outputs, 1)) + self.never

        @torch.inference_mode()
        def greedy(self, source, steps):
            value, keys, mask, h, c = self.encode(source)
            token = torch.full((source.shape[0],), START, dtype=torch.long)
            feed = value.new_zeros(source.shape[0], self.units)
            bias, ids = self.projection.bias + self.never, []
            for _ in range(steps):
                h, c, feed = self.step(self.target_embedding(token), h, c, feed, value, keys, mask)
                token = torch.addmm(bias, feed, self.projection.weight.t()).argmax(-1)
                ids.append(token)
            return torch.stack(ids, 1)

        @torch.inference_mode()
        def beam(self, source, steps, beams=5):
            """The best of `beams` hypotheses, every one `steps` long, by summed
            log-probability `(B, steps)`."""
            value, keys, mask, h, c = self.encode(source)
            batch = source.shape[0]
            value, keys, mask, h, c = (
                x.repeat_interleave(beams, 0) for x in (value, keys, mask, h, c)
            )
            scores = torch.full((batch, beams), NEVER)
            scores[:, 0] = 0.0  # one live hypothesis per source at first
            scores = scores.view(-1)
            token = torch.full((batch * beams,), START, dtype=torch.long)
            feed = value.new_zeros(batch * beams, self.units)
            ids = torch.zeros(batch * beams, 0, dtype=torch.long)
            first_row = (torch.arange(batch) * beams).unsqueeze(1)
            bias = self.projection.bias + self.never
            for _ in range(steps):
                h, c, feed = self.step(self.target_embedding(token), h, c, feed, value, keys, mask)
                logits = torch.addmm(bias, feed, self.projection.weight.t())
                total = torch.log_softmax(logits, -1) + scores.unsqueeze(1)
                scores, best = total.view(batch, -1).topk(beams, -1)
                rows = (best // self.vocabulary + first_row).view(-1)
                token, scores = (best % self.vocabulary).view(-1), scores.view(-1)
                h, c, feed = h[rows], c[rows], feed[rows]
                ids = torch.cat([ids[rows], token.unsqueeze(1)], 1)
            return ids.view(batch, beams, steps)[:, 0]

    return PlainLuong


def from_keras(model):
    """A `PlainLuong` holding the weights of a built `LuongSeq2Seq` (global attention, general
    score, input feeding, the biLSTM encoder), copied by role: Keras kernels are `(in, out)`,
    torch's weights `(out, in)`; both LSTMs order their gates i, f, g, o; Keras' one LSTM bias
    goes to `bias_ih`, and `bias_hh` is 0."""
    import torch

    embedding = int(model.source_embedding.embeddings.shape[1])
    plain = plain_luong_class()(model.target_vocabulary_size, model.units, embedding)

    def copy(parameter, variable, transpose=False):
        value = torch.as_tensor(keras.ops.convert_to_numpy(variable))
        parameter.copy_(value.T if transpose else value)

    forward, backward = model.encoder.forward_layer.cell, model.encoder.backward_layer.cell
    cell, attention = model.decoder.cell.cell, model.decoder.attention
    with torch.no_grad():
        copy(plain.source_embedding.weight, model.source_embedding.embeddings)
        copy(plain.target_embedding.weight, model.target_embedding.embeddings)
        for suffix, lstm in (("l0", forward), ("l0_reverse", backward)):
            copy(getattr(plain.encoder, f"weight_ih_{suffix}"), lstm.kernel, True)
            copy(getattr(plain.encoder, f"weight_hh_{suffix}"), lstm.recurrent_kernel, True)
            copy(getattr(plain.encoder, f"bias_ih_{suffix}"), lstm.bias)
            getattr(plain.encoder, f"bias_hh_{suffix}").zero_()
        for name in ("bridge_h", "bridge_c", "projection"):
            copy(getattr(plain, name).weight, getattr(model, name).kernel, True)
            copy(getattr(plain, name).bias, getattr(model, name).bias)
        copy(plain.cell.weight_ih, cell.kernel, True)
        copy(plain.cell.weight_hh, cell.recurrent_kernel, True)
        copy(plain.cell.bias_ih, cell.bias)
        plain.cell.bias_hh.zero_()
        copy(plain.key.weight, attention.key_kernel, True)
        copy(plain.attentional.weight, attention.attentional_kernel, True)
    return plain


def padded_sources(batch, length, vocabulary, seed=0, shortest=15):
    """Source ids `(batch, length)`, each row right-padded after `shortest` to `length` real
    ids, none of them padding, the start or the end token."""
    rng = np.random.default_rng(seed)
    source = rng.integers(3, vocabulary, (batch, length)).astype("int32")
    lengths = rng.integers(shortest, length + 1, batch)
    source[np.arange(length) >= lengths[:, None]] = 0
    return source


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    args = harness.timing_arguments(__doc__, parser, rounds=9, calls=1)
    if keras.backend.backend() != "torch":
        raise SystemExit("run with KERAS_BACKEND=torch")
    import torch

    torch.set_num_threads(args.threads)
    keras.utils.set_random_seed(0)
    decoding = LuongSeq2Seq(8000, 8000, units=256, embedding_dim=128)
    source = padded_sources(64, 30, 8000)
    decoding((source[:1], source[:1, :2]))
    kernel = decoding.projection.kernel
    kernel.assign(kernel * 50.0)
    plain = from_keras(decoding).eval()
    samplers = {"greedy": GreedySampler(), "beam": BeamSearchSampler(5)}
    sources = {64: source, 1: source[:1]}
    tensors = {batch: torch.as_tensor(ids, dtype=torch.long) for batch, ids in sources.items()}
    versions = {"keras-luong": {}, "plain PyTorch": {}}
    for name in samplers:
        for batch in sources:
            case = f"{name} {batch}"
            ours = decoding.generator(30, samplers[name], stop_token_ids=None)
            versions["keras-luong"][case] = lambda g=ours, b=batch: g.generate(sources[b], b)
            decode = plain.greedy if name == "greedy" else plain.beam
            versions["plain PyTorch"][case] = lambda d=decode, b=batch: d(tensors[b], 30)
            ids = keras.ops.convert_to_numpy(ours.generate(sources[batch], batch))
            ids = ids[:, 0] if ids.ndim == 3 else ids
            if not np.array_equal(ids, versions["plain PyTorch"][case]().numpy()):
                raise SystemExit(f"{case}: the two models decoded other ids")

    training = LuongSeq2Seq(1000, 1000, units=256, embedding_dim=128)
    source = padded_sources(64, 50, 1000, seed=1, shortest=25)
    target = padded_sources(64, 51, 1000, seed=2, shortest=51)  # no padding
    target_in, target_out = target[:, :-1], target[:, 1:]
    training.compile(
        keras.optimizers.Adam(1e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    training.train_on_batch((source, target_in), target_out)
    plain_training = from_keras(training).train()
    optimizer = torch.optim.Adam(plain_training.parameters(), 1e-3)
    loss = torch.nn.CrossEntropyLoss()
    pairs = [torch.as_tensor(x, dtype=torch.long) for x in (source, target_in, target_out)]

    def plain_step():
        optimizer.zero_grad()
        logits = plain_training(*pairs[:2])
        loss(logits.reshape(-1, 1000), pairs[2].reshape(-1)).backward()
        optimizer.step()

    versions["keras-luong"]["train 64"] = lambda: training.train_on_batch(
        (source, target_in), target_out
    )
    versions["plain PyTorch"]["train 64"] = plain_step
    cases = list(versions["keras-luong"])
    medians = harness.interleaved_medians(versions, cases, args.rounds, args.calls)
    print(f"torch {torch.__version__}, {args.threads} threads")
    settings = {"threads": str(args.threads), "torch": torch.__version__}
    harness.print_ratios(
        medians, cases, "keras-luong", "plain PyTorch", args.rounds, args.calls, args.json, settings
    )


if __name__ == "__main__":
    main()
