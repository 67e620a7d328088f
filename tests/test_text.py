"""Passages with the beginning-of-sequence token put first, left out, or as the tokenizer does it."""
import copy

import pytest

from connlap_lite import models
from connlap_lite.text import passages


@pytest.fixture(scope="module")
def tok():
    return models.load_model("minilm-l6")[1]


def with_bos(tok, token):
    t = copy.deepcopy(tok)
    t.bos_token = token
    return t


def test_bos_left_out_and_put_first(tok):
    cls, sep = tok.cls_token_id, tok.sep_token_id
    t = with_bos(tok, tok.cls_token)                 # [CLS] read as the BOS token: the tokenizer already puts it
    default = passages(t, 3, 16)["input_ids"]
    assert (default[:, 0] == cls).all() and (default[:, -1] == sep).all()
    assert (passages(t, 3, 16, bos=True)["input_ids"] == default).all()
    left_out = passages(t, 3, 16, bos=False)["input_ids"]
    assert left_out.shape == default.shape and not (left_out == cls).any() and (left_out[:, -1] == sep).all()
    other = with_bos(tok, "[unused0]")              # a BOS the tokenizer does not put: put before [CLS]
    put = passages(other, 3, 16, bos=True)["input_ids"]
    assert (put[:, 0] == other.bos_token_id).all() and (put[:, 1] == cls).all() and put.shape == default.shape
    assert (passages(other, 3, 16, bos=False)["input_ids"] == default).all()   # nothing to leave out
