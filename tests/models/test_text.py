"""Passages with the beginning-of-sequence token put first, left out, or as the tokenizer does it."""
import copy

import pytest

from connlap_lite.models import load as models, text
from connlap_lite.models.text import passages


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


def test_toggling_bos_keeps_every_passages_text_span(tok):
    """The windows are cut for the tokenizer's own specials: with the BOS left out or put first, each row is the
    same text span from the same token (the body shared), and the default passages are those of before."""
    t = with_bos(tok, tok.cls_token)                 # a tokenizer that puts its BOS ([CLS]) first
    for corpus, n, k in (("pydoc", 8, 64), ("pydoc", 5, 16)):
        kw = dict(corpus=corpus, seed=3)
        default, left_out = (passages(t, n, k, bos=b, **kw)["input_ids"] for b in (None, False))
        assert (left_out[:, :-2] == default[:, 1:-1]).all()          # the body shared, one more token at the end
        other = with_bos(tok, "[unused0]")           # a tokenizer that does not put it: put first
        put = passages(other, n, k, bos=True, **kw)["input_ids"]
        assert (put[:, 2:-1] == default[:, 1:-2]).all()              # the body shared, its last token given up
        assert text.windows(t, n, k, **kw) == text.windows(other, n, k, **kw)
    # a window that ends where its text ends takes the freed place's token from before it
    walk, conn = tok.convert_tokens_to_ids(["walk", "connection"])
    texts = ["walk " * 13 + "connection"]                             # 14 tokens: two windows of 7, no spare
    default = passages(t, 2, 9, texts=texts)["input_ids"]
    left_out = passages(t, 2, 9, texts=texts, bos=False)["input_ids"]
    assert (left_out[0, :-2] == default[0, 1:-1]).all() and left_out[0, -2] == walk
    assert (left_out[1, 1:-1] == default[1, 1:-1]).all() and left_out[1, -2] == conn and left_out[1, 0] == walk
    with pytest.raises(ValueError, match="fewer than the 8 a passage needs with bos=False"):
        passages(t, 1, 9, texts=["walk " * 6 + "connection"], bos=False)


# The corpora shipped with the package: fixed texts, identified by their digest, each passage within one text.

def test_every_corpus_ships_checked_against_its_digest():
    from importlib import resources
    data = resources.files("connlap_lite.models").joinpath("corpora")
    size = sum(data.joinpath(f"{name}.json.xz").stat().st_size for name in text.CORPORA)
    assert size < 3e6, f"the corpora take {size / 1e6:.1f} MB: a few MB at most"
    for name in text.CORPORA:
        meta = text.sources()[name]
        works = text.works(name)
        assert len(works) == meta["texts"] and sum(len(t) for _, t in works) == meta["characters"]
        assert text.corpus_digest(name) == meta["digest"] == text._digest(works)
        assert len({title for title, _ in works}) == len(works), f"{name}: one title per text"
        card = text.corpus_card(name)
        assert meta["digest"] in card and meta["licence"] in card and meta["release"] in card
    assert len(set(map(text.corpus_digest, text.CORPORA))) == 3
    assert [t for t, _ in text.works("narrative")] == ["Emma", "Mansfield Park", "Northanger Abbey", "Persuasion",
                                                       "Pride and Prejudice", "Sense and Sensibility"]
    novels = "\n".join(text.corpus("narrative")).lower()
    assert "gutenberg" not in novels and "a note on the text" not in novels, "only Austen's words"
    assert data.joinpath("PYTHON-LICENSE.txt").read_text().startswith("A. HISTORY OF THE SOFTWARE")


def test_damaged_data_is_refused_with_the_fix(monkeypatch):
    wrong = {name: {**meta, "digest": "0" * 16} for name, meta in text.sources().items()}
    monkeypatch.setattr(text, "sources", lambda: wrong)
    with pytest.raises(RuntimeError, match="does not match its digest 0{16}.*reinstall connlap-lite"):
        text.works.__wrapped__("stdlib")


def test_the_main_corpus_is_the_default_and_a_bad_name_is_refused(tok):
    assert text.default_texts() == text.corpus("pydoc")
    assert (passages(tok, 4, 32)["input_ids"] == passages(tok, 4, 32, corpus="pydoc")["input_ids"]).all()
    assert not (passages(tok, 4, 32)["input_ids"] == passages(tok, 4, 32, corpus="narrative")["input_ids"]).all()
    with pytest.raises(ValueError, match="corpus must be one of"):
        passages(tok, 2, 16, corpus="fortunes")


def test_a_passage_lies_within_one_text(tok):
    walk, conn = tok.convert_tokens_to_ids(["walk", "connection"])
    texts = ["walk " * 50, "connection " * 50, "walk"]          # 50 + 50 tokens; the last text is under a window
    batch = passages(tok, 12, 10, texts=texts)["input_ids"][:, 1:-1]     # (the [CLS] and [SEP] taken off)
    # 8 tokens a window: 6 windows in each long text (the last 2 tokens of each left over), none in the short one
    rows = [set(r.tolist()) for r in batch]
    assert sorted(map(sorted, rows)) == sorted([[walk]] * 6 + [[conn]] * 6)
    with pytest.raises(ValueError, match="give only 12 passages .* within one text"):
        passages(tok, 13, 10, texts=texts)
    # the real corpora: each passage's tokens are found, in order, in one novel
    ids = [tok(t, add_special_tokens=False, verbose=False)["input_ids"] for t in text.corpus("narrative")]
    for row in passages(tok, 3, 24, corpus="narrative", seed=1)["input_ids"][:, 1:-1].tolist():
        assert sum(any(doc[k:k + len(row)] == row for k in range(0, len(doc) - len(row) + 1, len(row)))
                   for doc in ids) >= 1


def _spans(windows, body):
    return {(i, t) for i, k in windows for t in range(k, k + body)}


@pytest.mark.parametrize("corpus", text.CORPORA)
def test_the_confirmation_split_touches_no_exploratory_passage(tok, corpus):
    """Issue 32: the confirmation passages share no token with any exploratory draw (every size in
    text.EXPLORATORY at seed 0, make test's and make book's settings among them), nor its neighbour (the BOS
    shift), and are drawn again the same from the same seed."""
    from connlap_lite.verdicts.rules import CONFIRMATION_SEED
    from connlap_lite.pages.settings import BOOK

    pre, post = text._specials(tok)
    explored = set()
    for n, k in text.EXPLORATORY:
        body = k - len(pre) - len(post)
        try:
            explored |= _spans(text.windows(tok, n, k, corpus=corpus, seed=0), body)
        except ValueError:                          # (a corpus too short for a size gives no passage of it)
            continue
    builds = {BOOK.sample(full=False), BOOK.sample(full=True)}
    assert builds <= set(text.EXPLORATORY)
    for n, k in builds:
        body = k - len(pre) - len(post)
        confirm = text.windows(tok, n, k, corpus=corpus, seed=CONFIRMATION_SEED, split="confirmation")
        assert len(set(confirm)) == n
        assert confirm == text.windows(tok, n, k, corpus=corpus, seed=CONFIRMATION_SEED, split="confirmation")
        assert confirm != text.windows(tok, n, k, corpus=corpus, seed=CONFIRMATION_SEED + 1, split="confirmation")
        widened = {(i, t) for i, k0 in confirm for t in range(k0 - 1, k0 + body + 1)}
        assert not widened & explored, f"{corpus}: a confirmation passage touches an exploratory one"
        rows = passages(tok, n, k, corpus=corpus, seed=CONFIRMATION_SEED, split="confirmation")["input_ids"]
        assert rows.shape == (n, k)


@pytest.mark.parametrize("corpus", text.CORPORA)
def test_the_full_builds_draw_holds_make_tests_passages(tok, corpus):
    """The scorecard's confirmation paragraph says the full build's exploratory draw (seed 0) holds make test's
    passages, those the rules were developed on: true while both settings have one passage length."""
    from connlap_lite.pages.settings import BOOK

    (n_test, k_test), (n_full, k_full) = BOOK.sample(full=False), BOOK.sample(full=True)
    assert k_test == k_full and n_test <= n_full
    small = text.windows(tok, n_test, k_test, corpus=corpus, seed=0)
    assert set(small) <= set(text.windows(tok, n_full, k_full, corpus=corpus, seed=0))


def test_a_bad_split_is_refused_with_the_names(tok):
    with pytest.raises(ValueError, match="split must be one of"):
        passages(tok, 2, 16, split="holdout")
