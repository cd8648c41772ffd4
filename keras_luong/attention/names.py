"""Attention names that meant two things up to keras-luong 0.3, each with one meaning since 0.4.

`alignment="monotonic"` was Luong's local-m beside `MonotonicAttention` (Raffel's,
`alignment="hard-monotonic"`); `"location"` was both a score (Luong's `softmax(W_a h_t)`) and an
alignment (location-sensitive attention); `"bahdanau"` was both a score and an
`attention_timing`. A constructor given an old spelling raises a `ValueError` that names the new
one (`check_current_name`); a saved config is read with the new spellings (`current_config`),
so `.keras` files written by earlier versions load.
"""

# argument -> {old spelling: (new spelling, what it is)}
RENAMED = {
    "alignment": {
        "monotonic": ("local-m", "Luong's local-m; MonotonicAttention is 'hard-monotonic'"),
        "predictive": ("local-p", "Luong's local-p"),
        "location": (
            "location-sensitive",
            "location-sensitive attention; Luong's location score is score_mode='location'",
        ),
    },
    "score_mode": {
        "bahdanau": ("additive", "Bahdanau's additive score; attention_timing keeps 'bahdanau'"),
    },
}


def check_current_name(argument, value):
    """Raises a `ValueError` naming the new spelling if `value` is an old one of `argument`."""
    if isinstance(value, str) and value in RENAMED[argument]:
        new, meaning = RENAMED[argument][value]
        raise ValueError(
            f"Invalid value for argument {argument}: {value!r} is spelled {new!r} since "
            f"keras-luong 0.4.0 ({meaning}). Received: {argument}={value!r}"
        )
    return value


def current_config(config):
    """A copy of a layer's or model's config with the old spellings replaced by the new ones."""
    config = dict(config)
    for argument, renames in RENAMED.items():
        value = config.get(argument)
        if isinstance(value, str) and value in renames:
            config[argument] = renames[value][0]
    return config
