"""The environment handed to commands the model runs, without credentials.

A variable is withheld when its name says it holds a credential (split into word parts, so that
PAT matches GH_PAT but not PATH, and AUTH matches SSH_AUTH_SOCK but not GIT_AUTHOR_NAME) or when
its value has the shape of one (a known token prefix, a JWT, a PEM private key, a URL with a
password or a token for a user name). Names the system and every shell rely on are passed before
any of that is looked at, so they can never be withheld by mistake; names the user allows are
passed as they are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

# Never credentials, always needed: checked first, so neither rule below can drop them.
ALWAYS_PASSED = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "TERM",
        "SHELL",
        "USER",
        "LOGNAME",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "HOSTNAME",
        "TZ",
        "TMPDIR",
        "TEMP",
        "TMP",
        "MAIL",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "MANPATH",
        "INFOPATH",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "COLORTERM",
        "COLUMNS",
        "LINES",
        "LS_COLORS",
        "TERM_PROGRAM",
        "TERM_PROGRAM_VERSION",
        "NO_COLOR",
        "FORCE_COLOR",
        "CLICOLOR",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CUDA_VISIBLE_DEVICES",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "XDG_STATE_HOME",
        "XDG_DATA_DIRS",
        "XDG_CONFIG_DIRS",
        "XDG_CURRENT_DESKTOP",
        "XDG_SESSION_ID",
        "XDG_SESSION_TYPE",
        "XDG_SESSION_CLASS",
        "XDG_SESSION_DESKTOP",
        "DESKTOP_SESSION",
    }
)
ALWAYS_PASSED_PREFIXES = ("LC_",)
# Addresses of the person's session services: the session bus runs anything through
# `systemd-run --user`, an agent socket signs with the person's keys. They are never passed, even
# when named in env_allow, so that no configuration turns a sandboxed command into an escape.
NEVER_PASSED = frozenset(
    {
        "DBUS_SESSION_BUS_ADDRESS",
        "XDG_RUNTIME_DIR",
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "GPG_AGENT_INFO",
        "SESSION_MANAGER",
        "DOCKER_HOST",
    }
)
# A name part equal to one of these marks a credential.
SECRET_WORDS = frozenset(
    {
        "KEY",
        "KEYS",
        "APIKEY",
        "SECRET",
        "SECRETS",
        "TOKEN",
        "TOKENS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASS",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "AUTH",
        "OAUTH",
        "AUTHORIZATION",
        "PAT",
        "COOKIE",
        "COOKIES",
        "SESSION",
        "SESSIONS",
        "PRIVATE",
        "DSN",
        "PWD",
        "WEBHOOK",
        "WEBHOOKS",
    }
)
# A last name part equal to one of these does too: LDAP_BIND_PW. Not anywhere, because Playwright's
# options (PW_TEST_HTML_REPORT_OPEN, ...) start with PW.
SECRET_LAST_WORDS = frozenset({"PW"})
# A name part ending in one of these does too: APIKEY, AUTHTOKEN, CLIENTSECRET, DBPASSWORD.
# Not PWD: OLDPWD and the like name directories.
SECRET_SUFFIXES = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "WEBHOOK")
SECRET_PREFIXES = ("NPM_AUTH",)
# DATABASE_URL, REDIS_URL, MONGO_URI: connection strings carry their password.
_URL_WORDS = frozenset({"URL", "URI", "URLS"})
_DATABASE_WORDS = frozenset(
    {
        "DATABASE",
        "DB",
        "POSTGRES",
        "POSTGRESQL",
        "PG",
        "PSQL",
        "MYSQL",
        "MARIADB",
        "MONGO",
        "MONGODB",
        "REDIS",
        "AMQP",
        "RABBITMQ",
        "BROKER",
        "CELERY",
        "SQLALCHEMY",
        "KAFKA",
        "ELASTICSEARCH",
        "SENTRY",
    }
)

_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# A token starts where a word starts, not inside another word; after any other character it may
# start, so that one in a URL (https://ghp_...@github.com), a path or a list is found too.
_START = r"(?<![A-Za-z0-9])"
SECRET_VALUE_SHAPES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        _START + r"sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic, DeepSeek, ...
        _START + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}",  # Stripe secret and restricted keys
        _START + r"whsec_[A-Za-z0-9]{24,}",  # Stripe webhook signing secrets
        _START + r"pypi-Ag[A-Za-z0-9_-]{40,}",  # PyPI and TestPyPI upload tokens (macaroons)
        _START + r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}",  # Docker Hub personal and organisation tokens
        _START + r"shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}",  # Shopify
        _START + r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub classic, OAuth, user, server, refresh
        _START + r"github_pat_[A-Za-z0-9_]{22,}",
        _START + r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
        _START + r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])",  # AWS access key ids
        _START + r"AIza[A-Za-z0-9_-]{35}",  # Google API keys
        _START + r"xox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
        _START + r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab
        _START + r"npm_[A-Za-z0-9]{36}",
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",  # JWT: {"alg"...}.{"sub"...}.signature
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY",  # PEM and OpenSSH private keys, PGP private key blocks
        r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:[^\s/@]+@",  # scheme://user:password@host
        # scheme://TOKEN@host: a user name long and random enough to be a token (git@ and alice@ pass).
        r"[A-Za-z][A-Za-z0-9+.-]*://(?=[^\s/@:]*[0-9])[A-Za-z0-9_-]{20,}@",
    )
)


def name_parts(name: str) -> list[str]:
    """Upper-case word parts: `GH_PAT` -> GH, PAT; `awsSecretKey` -> AWS, SECRET, KEY."""
    return [part.upper() for chunk in re.split(r"[^A-Za-z0-9]+", name) for part in _NAME_PART.findall(chunk)]


def always_passed(name: str) -> bool:
    return name in ALWAYS_PASSED or name.startswith(ALWAYS_PASSED_PREFIXES)


def secret_name(name: str) -> bool:
    """Whether the name alone says the variable holds a credential."""
    if always_passed(name):
        return False
    if name.upper().startswith(SECRET_PREFIXES):
        return True
    parts = name_parts(name)
    if any(part in SECRET_WORDS or part.endswith(SECRET_SUFFIXES) for part in parts):
        return True
    if parts and parts[-1] in SECRET_LAST_WORDS:
        return True
    if parts and parts[-1] in _URL_WORDS and _DATABASE_WORDS.intersection(parts):
        return True
    return "CONNECTION" in parts and "STRING" in parts


def secret_value(value: str) -> bool:
    """Whether the value has the shape of a credential, whatever its name."""
    return any(shape.search(value) for shape in SECRET_VALUE_SHAPES)


def looks_secret(name: str, value: str = "") -> bool:
    """Whether a variable is withheld from commands, by its name or by its value."""
    if name in NEVER_PASSED:
        return True
    if always_passed(name):
        return False
    return secret_name(name) or secret_value(value)


def filtered_environment(allowed: set[str], source: Mapping[str, str] | None = None) -> dict[str, str]:
    """Copy of the environment minus credentials by name or value, except the names allowed."""
    env = os.environ if source is None else source
    return {
        name: value
        for name, value in env.items()
        if name not in NEVER_PASSED and (name in allowed or not looks_secret(name, value))
    }
