"""Secrets by shape (SPEC §26): what looks like a secret is masked wherever it appears, not
only the channel secrets loopkit was configured with — held as properties over realistic key
formats in realistic surroundings, and over the near-misses that must stay as they are."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.redact import MASK, LineRedactor, Redactor, mask_shapes

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
UPPER32 = string.ascii_uppercase + "234567"
HEX = "0123456789abcdef"


def text(alphabet: str, size: int, most: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=size, max_size=most or size)


def with_a_digit(body: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return body.filter(lambda s: any(c.isdigit() for c in s))


# Each key as its issuer publishes its shape (prefix, alphabet, length).
KEYS: st.SearchStrategy[str] = st.one_of(
    # Anthropic: sk-ant-api03-… / sk-ant-admin01-…, ~95 url-safe characters.
    st.builds(lambda k, b: f"sk-ant-{k}-{b}AA", st.sampled_from(["api03", "admin01"]),
              with_a_digit(text(URLSAFE, 80, 95))),
    # OpenAI: sk-… (48), sk-proj-… / sk-svcacct-… (long, url-safe).
    st.builds(lambda b: f"sk-{b}", with_a_digit(text(ALNUM, 48))),
    st.builds(lambda k, b: f"sk-{k}-{b}", st.sampled_from(["proj", "svcacct", "admin"]),
              with_a_digit(text(URLSAFE, 64, 160))),
    # Stripe secret and restricted keys.
    st.builds(lambda k, m, b: f"{k}_{m}_{b}", st.sampled_from(["sk", "rk"]),
              st.sampled_from(["live", "test"]), text(ALNUM, 24, 99)),
    # Slack: bot, user, app-level and legacy tokens.
    st.builds(lambda k, a, b, c: f"xox{k}-{a}-{b}-{c}", st.sampled_from("bpaors"),
              text(string.digits, 10, 13), text(string.digits, 10, 13), text(ALNUM, 24)),
    st.builds(lambda a, b, c: f"xapp-1-A{a}-{b}-{c}", text(UPPER32, 10), text(string.digits, 13),
              text(HEX, 64)),
    # GitHub: classic and fine-grained tokens, OAuth, user-to-server, server, refresh.
    st.builds(lambda k, b: f"gh{k}_{b}", st.sampled_from("pousr"), text(ALNUM, 36, 40)),
    st.builds(lambda a, b: f"github_pat_{a}_{b}", text(ALNUM, 22), text(ALNUM, 59)),
    st.builds(lambda b: f"glpat-{b}", text(URLSAFE, 20)),  # GitLab
    # AWS access key ids (their secret keys have no shape: see the named values).
    st.builds(lambda k, b: f"{k}{b}", st.sampled_from(["AKIA", "ASIA"]), text(UPPER32, 16)),
    st.builds(lambda b: f"AIza{b}", text(URLSAFE, 35)),  # Google API key
    st.builds(lambda b: f"hf_{b}", text(string.ascii_letters, 34)),  # Hugging Face
    st.builds(lambda b: f"npm_{b}", text(ALNUM, 36)),  # npm
    st.builds(lambda b: f"pypi-AgEIcHlwaS5vcmc{b}", text(URLSAFE, 60, 120)),  # PyPI
    st.builds(lambda a, b, c: f"eyJ{a}.eyJ{b}.{c}", text(URLSAFE, 20, 60),  # a JWT
              text(URLSAFE, 20, 200), text(URLSAFE, 43)),
)  # fmt: skip

# Where keys turn up: an agent's output, a question's context, a log line, a URL, JSON.
PLACES = st.sampled_from(
    [
        "{k}",
        "export ANTHROPIC_API_KEY={k} and retry",
        "the key is {k}.",
        "Using key ({k}) from .env",
        'config = {{"key": "{k}", "model": "opus"}}',
        "curl -H 'Authorization: Bearer {k}' https://api.example.com/v1",
        "https://hooks.example.com/x?auth={k}&retry=1",
        "set it with\n    {k}\nthen run the tests",
        "'{k}'",
        "TOKEN: {k}",
    ]
)


@settings(max_examples=400)
@given(KEYS, PLACES)
def test_a_key_of_a_known_shape_is_masked_wherever_it_appears(key: str, place: str) -> None:
    line = place.format(k=key)
    masked = Redactor().text(line)
    assert key not in masked and MASK in masked
    assert key[10:] not in masked  # nothing of its secret part survives
    for word in place.replace("{k}", " ").split():  # the prose around it stays
        if word.isalpha():
            assert word in masked, (line, masked)
    assert mask_shapes(line) == masked  # the same rule where texts are made (a question)
    assert Redactor().text(masked) == masked  # masking twice changes nothing


NAMES = st.sampled_from(
    ["password", "PASSWORD", "db_password", "passwd", "api_key", "API_KEY", "apikey", "api-key",
     "token", "TOKEN", "GITHUB_TOKEN", "access_token", "refresh_token", "auth_token", "secret",
     "client_secret", "AWS_SECRET_ACCESS_KEY", "secret_key", "private_key", "passphrase"]
)  # fmt: skip
VALUES = st.text(ALNUM + "!#%+-./:@^_~", min_size=4, max_size=40).filter(
    lambda v: (
        v[0] not in "$<{%*"
        and v.lower() not in ("none", "null", "nil", "true", "false", "undefined")
    )
)
FORMS = st.sampled_from(["{n}={v}", "{n} = {v}", '{n}="{v}"', "{n}='{v}'", '"{n}": "{v}"',
                         "--{n}={v}", "{n}: '{v}'"])  # fmt: skip


@settings(max_examples=400)
@given(NAMES, VALUES, FORMS)
def test_a_value_named_as_a_secret_is_masked_and_its_name_kept(
    name: str, value: str, form: str
) -> None:
    pair = form.format(n=name, v=value)
    line = f"connecting with {pair} now"
    masked = Redactor().text(line)
    assert name in masked and masked.startswith("connecting with ") and masked.endswith(" now")
    pair_shown = masked.removeprefix("connecting with ").removesuffix(" now")  # "with" is no leak
    assert value not in pair_shown.replace(name, ""), (line, masked)


PEM = st.builds(
    lambda kind, lines: "\n".join(
        [f"-----BEGIN {kind}PRIVATE KEY-----", *lines, f"-----END {kind}PRIVATE KEY-----"]
    ),
    st.sampled_from(["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA "]),
    st.lists(text(string.ascii_letters + string.digits + "+/", 64), min_size=1, max_size=12),
)


@given(PEM, st.integers(1, 64))
def test_a_private_key_block_is_masked_whole_even_when_it_arrives_in_pieces(
    block: str, cut: int
) -> None:
    body = block.splitlines()[1]
    line = f"wrote id_rsa:\n{block}\nand moved on\n"
    masked = Redactor().text(line)
    assert body not in masked and "wrote id_rsa:" in masked and "and moved on" in masked
    out: list[bytes] = []
    stream = LineRedactor(out.append, Redactor())
    data = line.encode()
    for start in range(0, len(data), cut):  # the agent's output, read in any pieces
        stream.write(data[start : start + cut])
    stream.flush()
    streamed = b"".join(out).decode()
    assert body not in streamed and "and moved on" in streamed, streamed


# Near-misses: what a log, a diff or a question is full of, and which must stay readable.
NEAR_MISSES = [
    "sk-learn", "use sk-learn 1.4", "max_tokens=4096", "num_tokens = 12", "token_count=3",
    "pass=3 fail=0", "tokenizer=bpe", "password_file=/etc/app/pw", "secret_name=db",
    "the token expired", "Secret Santa", "AKIA", "ghp_", "xoxb", "api_key=None",
    "password=$DB_PASSWORD", "token=${TOKEN}", "api_key=<your key>", "token=***",
    "password: str", "def login(password: str, token: str) -> None:",
    "password = getpass()", "api_key = os.environ['API_KEY']", "sk-ant-",
    "Authorization: required", "KEY=value", "monkey=3", "turkey_count=4",
    "BEGIN PRIVATE KEY handling", "session_id=5a0c2d57",
]  # fmt: skip
KEEP = st.one_of(
    text(HEX, 40),  # a git commit
    text(HEX, 7, 12),  # a short one
    st.uuids().map(str),
    text(HEX, 64).map(lambda h: f"sha256:{h}"),
    st.sampled_from(NEAR_MISSES),
    st.text(string.ascii_letters + " .,;:!?'-", max_size=80),  # plain prose
)


@settings(max_examples=500)
@given(KEEP)
def test_what_only_resembles_a_secret_stays_as_it_is(line: str) -> None:
    assert Redactor().text(line) == line
    assert mask_shapes(line) == line
