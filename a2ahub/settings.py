"""Settings for A2A Hub, read from the environment in one place.

Every variable is validated here; a bad value stops start-up with a message that names it.
With no configuration the hub runs embedded (SQLite, in-memory channel layer, in-process
worker); `DATABASE_URL` and `REDIS_URL` turn it into a distributed deployment.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import warnings
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from a2ahub.tracing import configured as tracing_configured

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
Number = TypeVar("Number", int, float)


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}")


def env_int(name: str, default: int, minimum: int, maximum: int) -> int:
    return _env_number(name, default, minimum, maximum, int)


def env_float(name: str, default: float, minimum: float, maximum: float) -> float:
    return _env_number(name, default, minimum, maximum, float)


def _env_number(
    name: str, default: Number, minimum: Number, maximum: Number, parse: type[Number]
) -> Number:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = parse(raw)
    except ValueError:
        kind = "a whole number" if parse is int else "a number"
        raise ImproperlyConfigured(f"{name} must be {kind}, not {raw!r}") from None
    if not minimum <= value <= maximum:
        raise ImproperlyConfigured(f"{name} must be between {minimum} and {maximum}, not {value}")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


def env_renamed_list(name: str, old_name: str) -> list[str]:
    """A list setting that had another name: the old one is still read, with a warning."""
    if name not in os.environ and old_name in os.environ:
        warnings.warn(
            f"{old_name} is deprecated and will be removed: set {name} instead",
            FutureWarning,  # shown by default: the reader is an operator, not a developer
            stacklevel=2,
        )
        return env_list(old_name)
    return env_list(name)


def env_url(name: str, schemes: set[str], allow_path: bool = True) -> str:
    raw = env_str(name)
    if not raw:
        return ""
    parts = urlsplit(raw)
    if parts.scheme not in schemes or not parts.hostname:
        wanted = " or ".join(sorted(f"{s}://" for s in schemes))
        raise ImproperlyConfigured(f"{name} must be a {wanted} URL with a host, not {raw!r}")
    if not allow_path and (parts.path not in ("", "/") or parts.query or parts.fragment):
        raise ImproperlyConfigured(f"{name} must not have a path, query or fragment: {raw!r}")
    return raw


def env_jwks(name: str) -> list[dict[str, object]]:
    """Public keys as a JWKS (RFC 7517): the JSON itself, or the path of a file holding it.
    Each key needs a `kid` (signatures name their key by it); a private key is refused."""
    raw = env_str(name)
    if not raw:
        return []
    text = raw
    if not raw.startswith("{"):
        try:
            text = Path(raw).read_text()
        except OSError as exc:
            problem = f"{name}: cannot read the JWKS file {raw!r}: {exc}"
            raise ImproperlyConfigured(problem) from None
    try:
        keys = json.loads(text).get("keys")
    except (ValueError, AttributeError):
        raise ImproperlyConfigured(f'{name} must be a JWKS: {{"keys": [...]}}') from None
    if not isinstance(keys, list) or not all(isinstance(k, dict) for k in keys):
        raise ImproperlyConfigured(f'{name} must be a JWKS: {{"keys": [...]}}')
    for key in keys:
        if not isinstance(key.get("kid"), str) or not key["kid"] or "kty" not in key:
            raise ImproperlyConfigured(f"{name}: every key needs a kty and a kid")
        if "d" in key:
            raise ImproperlyConfigured(f"{name}: key {key['kid']!r} is private; list public keys")
    return keys


def data_dir() -> Path:
    path = Path(env_str("DATA_DIR") or BASE_DIR / ".data")
    path.mkdir(parents=True, exist_ok=True)
    return path


def development_secret_key(directory: Path) -> str:
    """Kept in the data directory so sessions survive restarts of a development hub."""
    key_file = directory / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


DATA_DIR = data_dir()
DEBUG = env_bool("DEBUG", False)
DATABASE_URL = env_str("DATABASE_URL")
REDIS_URL = env_url("REDIS_URL", {"redis", "rediss", "unix"})
EMBEDDED = not REDIS_URL

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if DATABASE_URL and not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DATABASE_URL is set and DEBUG is off "
            "(a generated key is only for development)"
        )
    SECRET_KEY = development_secret_key(DATA_DIR)
elif len(SECRET_KEY) < 32:
    raise ImproperlyConfigured("SECRET_KEY must be at least 32 characters long")

HOST = env_str("HOST", "127.0.0.1")
PORT = env_int("PORT", 8000, 1, 65535)
# The gRPC binding (protocol/grpc_server.py): its own port, on HOST like the web server; 0
# serves no gRPC and lists none on the cards. TLS when both files are named (PEM); the address
# cards list is GRPC_PUBLIC_ADDRESS (`host:port`), else PUBLIC_BASE_URL's host (or the host a
# card was asked at) with GRPC_PORT.
GRPC_PORT = env_int("GRPC_PORT", 50051, 0, 65535)
GRPC_TLS_CERT_FILE = env_str("GRPC_TLS_CERT_FILE")
GRPC_TLS_KEY_FILE = env_str("GRPC_TLS_KEY_FILE")
GRPC_PUBLIC_ADDRESS = env_str("GRPC_PUBLIC_ADDRESS")
# A `rungrpc` process counts its requests in its own memory, which no web process's /metrics
# shows: it serves them at /metrics on this port (the web's access rules); 0: it does not.
GRPC_METRICS_PORT = env_int("GRPC_METRICS_PORT", GRPC_PORT + 1 if GRPC_PORT else 0, 0, 65535)
if bool(GRPC_TLS_CERT_FILE) != bool(GRPC_TLS_KEY_FILE):
    raise ImproperlyConfigured("GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE go together")
PUBLIC_BASE_URL = env_url("PUBLIC_BASE_URL", {"http", "https"}, allow_path=False).rstrip("/")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
if PUBLIC_BASE_URL:
    ALLOWED_HOSTS.append(urlsplit(PUBLIC_BASE_URL).hostname or "")
CSRF_TRUSTED_ORIGINS = [PUBLIC_BASE_URL] if PUBLIC_BASE_URL else []

# Served over HTTPS (as PUBLIC_BASE_URL says), the session and CSRF cookies are never sent over
# plain HTTP. A proxy's X-Forwarded-Proto is believed only when the operator says the proxy
# sets it (a client could otherwise claim HTTPS).
HTTPS = PUBLIC_BASE_URL.startswith("https://")
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
if env_bool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The pages' security headers (Django's defaults, said here so they are not lost by accident);
# the Content-Security-Policy is added by a2ahub.site_security.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"  # no page of the hub, the admin's included, is meant to be framed

LOGIN_THROTTLE_ATTEMPTS = env_int("LOGIN_THROTTLE_ATTEMPTS", 5, 0, 10_000)
LOGIN_THROTTLE_WINDOW_SECONDS = env_int("LOGIN_THROTTLE_WINDOW_SECONDS", 900, 1, 86_400)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "oauth2_provider",
    "a2ahub",
    "agents",
    "tasks",
    "push",
    "registry",
    "developers",
    "console",
    "operators_api",
    "protocol",  # no models: its `rungrpc` command
]

MIDDLEWARE = [
    # First: every later middleware's log lines carry the request's id (the A2A doors,
    # served without middleware, set theirs in protocol/asgi.py).
    "a2ahub.request_id.RequestIdMiddleware",
    # A span per request while tracing is on (the registry, the pages); not in the chain when off.
    "a2ahub.tracing.TracingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "a2ahub.site_security.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "a2ahub.urls"
ASGI_APPLICATION = "a2ahub.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def database_config(url: str) -> dict[str, object]:
    if not url:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "hub.sqlite3",
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    try:
        config: dict[str, object] = dict(dj_database_url.parse(url))
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL we can use: {exc}") from exc
    if config["ENGINE"] == "django.db.backends.postgresql":
        # Under ASGI a page runs each request on a new thread (a door call on a lent one), so
        # CONN_MAX_AGE would keep a connection per thread: a pool keeps them across requests.
        config["CONN_MAX_AGE"] = 0
        # The pool checks a connection (one empty statement) before handing it out: after the
        # database restarts every pooled connection is dead, and each would fail the request
        # or turn it was handed to.
        config["CONN_HEALTH_CHECKS"] = True
        config["OPTIONS"] = {
            "pool": {
                "min_size": env_int("DATABASE_POOL_MIN", 2, 0, 100),
                "max_size": env_int("DATABASE_POOL_MAX", 20, 1, 500),
                # Given back once idle this long (the async pool's too): a burst's connections
                # do not stay taken from max_connections, which every process shares.
                "max_idle": env_float("DATABASE_POOL_IDLE_SECONDS", 300.0, 1.0, 86400.0),
                "timeout": 10,
            }
        }
    elif config["ENGINE"] != "django.db.backends.sqlite3":
        raise ImproperlyConfigured("DATABASE_URL must be a postgres:// or sqlite:// URL")
    return config


DATABASES = {"default": database_config(DATABASE_URL)}
# Prepared statements for the writes made from the event loop (a2ahub/asyncdb.py); turn off
# behind a pooler that cannot keep them, such as PgBouncer in transaction mode.
DATABASE_PREPARE_THRESHOLD: int | None = 1 if env_bool("DATABASE_PREPARE", True) else None
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CHANNEL_LAYERS: dict[str, dict[str, object]]
if EMBEDDED:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }

# The cache holds only counters shared by the web processes (login throttling): in Redis when
# there are several processes, in memory when there is one.
CACHES: dict[str, dict[str, object]]
if EMBEDDED:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "a2ahub",
        }
    }

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_BROKER_TRANSPORT = "a2ahub.broker:Transport" if REDIS_URL else None
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Workers and beat without their broker have nothing else to do: they keep trying (every
# second at most, `a2ahub.broker`) rather than give up after Celery's 100 attempts.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CONSUMER = "a2ahub.broker:Consumer"
CELERY_WORKER_CONCURRENCY = env_int("CELERY_CONCURRENCY", 4, 1, 64)
# The PostgreSQL connections a worker process's jobs write on, shared by all its threads
# (`tasks.runner.job_loop`): one statement is a millisecond or two, and with one connection
# worker sends ran about 4 % slower than with two.
WORKER_DB_CONNECTIONS = env_int("WORKER_DB_CONNECTIONS", 2, 1, 64)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_SEND_TASK_EVENTS = False
CELERY_TASK_SEND_SENT_EVENT = False
# Celery's Django fix-up would otherwise close the database connection around every job.
CELERY_DB_REUSE_MAX = 1000
# Beat keeps its schedule in memory: every periodic job is an interval, safe to run twice.
CELERY_BEAT_SCHEDULER = "a2ahub.broker:Scheduler"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# One date format across the hub, to the second ("2026-11-27 01:54:07"): Django reads the
# locale's formats before these settings, so they live in a format module of our own.
FORMAT_MODULE_PATH = ["a2ahub.formats"]
DATETIME_FORMAT = "Y-m-d H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s"

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
# The ASGI app serves static files itself so one command runs a complete hub.
SERVE_STATIC = env_bool("SERVE_STATIC", True)

LOGIN_URL = "developers:login"

# The agent named here also answers at the host root, for clients that only look there.
HUB_DEFAULT_AGENT = env_str("HUB_DEFAULT_AGENT", "echo")
HUB_NAME = env_str("HUB_NAME", "A2A Hub")
CARD_CACHE_SECONDS = env_int("CARD_CACHE_SECONDS", 300, 0, 86400)

# Outbound HTTP (a2ahub/outbound.py): webhooks, backends and remote agents never reach private,
# loopback or link-local addresses, except the exact host names or addresses listed here
# (development). PUSH_ALLOWED_HOSTS is its old name, from when only webhooks went out.
OUTBOUND_ALLOWED_HOSTS = env_renamed_list("OUTBOUND_ALLOWED_HOSTS", "PUSH_ALLOWED_HOSTS")

# A2A protocol limits and timings.
A2A_MAX_REQUEST_BYTES = env_int("A2A_MAX_REQUEST_BYTES", 10 * 1024 * 1024, 1024, 1024**3)
# How many hubs a request may have passed through (the A2A-Hub-Hops header, a2ahub/hops.py):
# past it the door refuses the request, so an agent that reaches itself through other hubs ends.
A2A_MAX_HOPS = env_int("A2A_MAX_HOPS", 8, 1, 100)
# What one request may carry besides its size (protocol/request_caps.py): parts per message,
# levels of nested objects and arrays, and bytes of JSON in one metadata value.
A2A_MAX_MESSAGE_PARTS = env_int("A2A_MAX_MESSAGE_PARTS", 1000, 1, 1_000_000)
A2A_MAX_JSON_DEPTH = env_int("A2A_MAX_JSON_DEPTH", 32, 4, 900)
A2A_MAX_METADATA_BYTES = env_int("A2A_MAX_METADATA_BYTES", 64 * 1024, 64, 1024**3)
# A request body larger than this is parsed and checked on a thread, its answer serialized on
# one too, as are the task rows it makes (planned, then read back), so the event loop keeps
# answering other requests meanwhile (a2ahub/big_bodies.py).
A2A_THREAD_BODY_BYTES = env_int("A2A_THREAD_BODY_BYTES", 256 * 1024, 0, 1024**3)
# The Unix socket of the bulk process, which serves door requests whose body passes
# A2A_THREAD_BODY_BYTES so that their long C calls hold another interpreter (`protocol.bulk`);
# runhub starts one and sets it for a distributed hub. Empty: each web process serves its own.
BULK_PROCESS = env_bool("A2AHUB_BULK_PROCESS", False)  # runhub's bulk process itself
A2A_BULK_SOCKET = "" if BULK_PROCESS else env_str("A2A_BULK_SOCKET")
A2A_BLOCKING_TIMEOUT_SECONDS = env_float("A2A_BLOCKING_TIMEOUT_SECONDS", 60.0, 0.1, 3600.0)
# Every process says it is alive this often (a2ahub/processes.py) and beats the hearts of the
# turns it runs (one UPDATE of its running tasks); recovery runs as often. A process silent for
# three beats is gone: its turns are failed, the turns its worker held are queued again (within
# ~8 s at the default). TASK_STALE_SECONDS is for turns whose process lives but that nobody
# beats, or that waited that long in a busy queue.
TASK_HEARTBEAT_SECONDS = env_float("TASK_HEARTBEAT_SECONDS", 2.0, 0.1, 3600.0)
TASK_STALE_SECONDS = env_float("TASK_STALE_SECONDS", 60.0, 1.0, 86400.0)
# The executor kinds agents may name: the class (a dotted path, imported on first use), the
# label the forms show, and where its turns run unless the agent says ("inline" or "worker").
EXECUTOR_KINDS: dict[str, dict[str, str]] = {
    "echo": {"class": "executors.echo.EchoExecutor", "label": "Echo"},
    "conformance": {
        "class": "executors.conformance.ConformanceExecutor",
        "label": "Conformance (A2A TCK scenarios)",
    },
    "interview": {
        "class": "executors.interview.InterviewExecutor",
        "label": "Multi-turn demo (asks, then answers)",
    },
    "python": {
        "class": "executors.python.PythonExecutor",
        "label": "Python functions (@skill in a module)",
    },
    "http": {
        "class": "executors.http.HttpExecutor",
        "label": "HTTP backend (the hub POSTs each message)",
    },
    "writer": {
        "class": "executors.writer.WriterExecutor",
        "label": "Writer demo (streams a text in chunks)",
    },
    "slow": {
        "class": "executors.slow.SlowExecutor",
        "label": "Slow demo (progress, cancellable)",
        "mode": "worker",
    },
    "a2a-remote": {
        "class": "executors.remote.RemoteAgentExecutor",
        "label": "Remote A2A agent (the hub fronts it)",
    },
    "orchestrator": {
        "class": "executors.orchestrator.OrchestratorExecutor",
        "label": "Orchestrator demo (sends sub-tasks to hosted agents)",
    },
    "llm": {
        "class": "executors.llm.LlmExecutor",
        "label": "Model with instructions and tools (OpenAI-compatible server)",
    },
}
# The longest answer an `llm` agent's model may give in one turn, in bytes of text: past it,
# the task fails (the model server's whole stream is held to a multiple of it).
LLM_MAX_ANSWER_BYTES = env_int("LLM_MAX_ANSWER_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024)
# The demo `assistant` agent's model server (seed_demo): enabled when both are set.
LLM_BASE_URL = env_str("LLM_BASE_URL")
LLM_MODEL = env_str("LLM_MODEL")
LLM_API_KEY = env_str("LLM_API_KEY")
# Each kind's settings form, shown by the admin and the developer pages alike.
EXECUTOR_SETTINGS_FORMS = "executors.settings_forms.SETTINGS_FORMS"
# Modules that register Python skills (@skill) for agents of the `python` executor kind.
A2A_SKILL_MODULES = env_list("A2A_SKILL_MODULES", "executors.demo_skills")
AGENT_CACHE_SECONDS = env_float("AGENT_CACHE_SECONDS", 2.0, 0.0, 3600.0)
SSE_HEARTBEAT_SECONDS = env_float("SSE_HEARTBEAT_SECONDS", 15.0, 0.1, 3600.0)
DATA_UPLOAD_MAX_MEMORY_SIZE = A2A_MAX_REQUEST_BYTES

# The audit log (agents.audit): each process writes the credential uses it counted this often
# (from its heartbeat, so at most once per TASK_HEARTBEAT_SECONDS too); uses and access changes
# older than the retention are pruned (0: kept forever).
AUDIT_FLUSH_SECONDS = env_float("AUDIT_FLUSH_SECONDS", 60.0, 0.1, 3600.0)
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", 90, 0, 36500)

# OAuth2 (django-oauth-toolkit under /o/): client credentials for machines, authorization
# code with PKCE for people, refresh tokens. Scopes come from the agents (agents/scopes.py):
# `a2a:invoke` (any agent the principal may call), `agent:<slug>`, `skill:<slug>:<skill id>`;
# a token asked for without scopes gets `a2a:invoke`. Secrets are stored hashed.
# Token introspection (/o/introspect/) tells a client about its own tokens only; the client
# ids named here (the resource servers the operator trusts) may introspect any token.
OAUTH2_INTROSPECTION_CLIENT_IDS = env_list("OAUTH2_INTROSPECTION_CLIENT_IDS", "")
OAUTH2_ACCESS_TOKEN_SECONDS = env_int("OAUTH2_ACCESS_TOKEN_SECONDS", 3600, 30, 86400 * 30)
OAUTH2_REFRESH_TOKEN_SECONDS = env_int("OAUTH2_REFRESH_TOKEN_SECONDS", 86400 * 30, 60, 86400 * 365)
OAUTH2_PROVIDER = {
    "SCOPES_BACKEND_CLASS": "agents.scopes.AgentScopes",
    "ACCESS_TOKEN_EXPIRE_SECONDS": OAUTH2_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": OAUTH2_REFRESH_TOKEN_SECONDS,
    "ROTATE_REFRESH_TOKEN": True,
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "client_credentials", "refresh_token"],
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http"],
    "OAUTH2_PROTECTED_RESOURCE_BEARER_METHODS_SUPPORTED": ["header"],
    "OAUTH2_PROTECTED_RESOURCE_NAME": "A2A Hub agents",
}
# django-oauth-toolkit's own models (named so that migrations can depend on them).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
if PUBLIC_BASE_URL:
    # The issuer is the hub itself: its metadata is at the root's well-known URL.
    OAUTH2_PROVIDER["OIDC_ISS_ENDPOINT"] = PUBLIC_BASE_URL

# ListTasks (protocol/handlers/tasks.py): `totalSize` is an exact count up to this many
# tasks; past it, PostgreSQL's estimate of the listing's size (never below this count), so a
# page of a caller with a million tasks does not count them all.
A2A_LIST_EXACT_TOTAL_LIMIT = env_int("A2A_LIST_EXACT_TOTAL_LIMIT", 10_000, 0, 10_000_000)


def env_networks(name: str, default: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    try:
        return [ipaddress.ip_network(item) for item in env_list(name, default)]
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be comma-separated CIDRs: {exc}") from None


# /metrics: a bearer token (401 without it when set), and the client addresses allowed at all
# (403 otherwise); the numbers name agents and their traffic, so only loopback by default.
METRICS_TOKEN = env_str("METRICS_TOKEN")
METRICS_ALLOWED_NETWORKS = env_networks("METRICS_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
# How long /readyz waits on each part (database, Redis, a worker's answer) before calling it
# not ready.
READINESS_TIMEOUT_SECONDS = env_float("READINESS_TIMEOUT_SECONDS", 2.0, 0.1, 30.0)

# The operators' console (console/): how often its live pages get fresh dashboard numbers,
# after how long an active task counts as stuck, how often the finished tasks of past minutes
# are rolled up for the charts, and how many messages a socket may have waiting before it is
# dropped and told to reload (a slow browser must not hold memory in the web process).
CONSOLE_REFRESH_SECONDS = env_float("CONSOLE_REFRESH_SECONDS", 5.0, 0.2, 300.0)
CONSOLE_STUCK_MINUTES = env_int("CONSOLE_STUCK_MINUTES", 5, 1, 1440)
CONSOLE_ROLLUP_SECONDS = env_float("CONSOLE_ROLLUP_SECONDS", 60.0, 1.0, 3600.0)
CONSOLE_SOCKET_QUEUE = env_int("CONSOLE_SOCKET_QUEUE", 64, 4, 10_000)

LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(
        f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, not {LOG_LEVEL!r}"
    )

# A diagnosis aid, off (0) by default: a web process's event loop runs in asyncio's debug mode
# and logs each callback that held it longer than this many milliseconds (the request or task
# that kept the process's other requests waiting). Debug mode costs CPU on every callback.
LOOP_HOLD_LOG_MS = env_int("LOOP_HOLD_LOG_MS", 0, 0, 60_000)

# `json`: one JSON object a line, with the id, agent, method and binding of the request that
# wrote it (a2ahub/logs.py); `plain`: text for people.
LOG_FORMAT = env_str("LOG_FORMAT", "plain").lower()
if LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}")

# Traces (a2ahub/tracing.py) are turned on by the standard OTEL_* variables, read by the
# OpenTelemetry SDK itself. This is where the admin's task page links a task's trace id:
# a URL with `{trace_id}` in it, such as http://127.0.0.1:16686/trace/{trace_id} (Jaeger).
TRACE_URL_TEMPLATE = env_url("TRACE_URL_TEMPLATE", {"http", "https"})
# While tracing is on, a span for every PostgreSQL and Redis command as well (a2ahub/tracing.py).
TRACE_COMMANDS = env_bool("TRACE_COMMANDS", False)
if not tracing_configured(os.environ):
    # The A2A SDK's own client spans (remote agents) would be made, unrecorded, on every call
    # when OpenTelemetry is installed: off with the hub's. Read when the SDK is imported.
    os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")
if TRACE_URL_TEMPLATE and "{trace_id}" not in TRACE_URL_TEMPLATE:
    raise ImproperlyConfigured("TRACE_URL_TEMPLATE must hold {trace_id}, where the id goes")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "a2ahub.logs.JsonFormatter"},
    },
    "filters": {"outages": {"()": "a2ahub.logs.OutagesFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # httpx logs every request URL at INFO, and webhook URLs may carry secrets. psycopg_pool
    # logs each connection taken and given back at INFO, and each failed reconnect (twice a
    # second while the database is away) as a warning: a2ahub.outages logs the outage.
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "httpx": {"level": "WARNING"},
        # The MCP door (stateless) starts and stops the SDK's session manager, and its
        # transport, for each request, and the SDK says so at INFO each time.
        "mcp": {"level": "WARNING"},
        "psycopg.pool": {"level": "ERROR"},
        # While the database or Redis is away, every periodic job fails on every tick, beat
        # cannot send them, and the loops that keep tasks and deliveries going fail on each
        # turn (see the filter).
        "celery.app.trace": {"filters": ["outages"]},
        "celery.beat": {"filters": ["outages"]},
        "a2ahub.schedule": {"filters": ["outages"]},
        "tasks.runner": {"filters": ["outages"]},
        "tasks.events": {"filters": ["outages"]},
        "push.engine": {"filters": ["outages"]},
    },
}

# Push notifications: how long and how often a failing webhook is retried.
PUSH_TIMEOUT_SECONDS = env_float("PUSH_TIMEOUT_SECONDS", 10.0, 0.5, 120.0)
PUSH_RETRY_BASE_SECONDS = env_float("PUSH_RETRY_BASE_SECONDS", 2.0, 0.01, 3600.0)
PUSH_RETRY_MAX_SECONDS = env_float("PUSH_RETRY_MAX_SECONDS", 3600.0, 0.1, 86400.0)
PUSH_RETRY_HORIZON_SECONDS = env_float("PUSH_RETRY_HORIZON_SECONDS", 86400.0, 1.0, 30 * 86400.0)
# While a receiver has deliveries waiting after failures, each delivery engine tries one of
# them again at least this often (unless the receiver's Retry-After asks for longer): a
# receiver back after a long outage gets its backlog within about this long, with no new
# webhook to find it back. At or above PUSH_RETRY_MAX_SECONDS it changes nothing.
PUSH_PROBE_SECONDS = env_float("PUSH_PROBE_SECONDS", 15.0, 0.1, 86400.0)
# A worker delivering a config's queue holds it this long; if the worker dies, another takes
# the queue over once the lease has run out (so keep it well above PUSH_TIMEOUT_SECONDS).
PUSH_LEASE_SECONDS = env_float("PUSH_LEASE_SECONDS", 120.0, 1.0, 3600.0)

# The delivery engine of each worker process (push/engine.py): how many config queues it works
# at once, each with one delivery in flight. A receiver that answers slowly holds one of them
# for as long as it takes, so the others keep going.
PUSH_CONCURRENCY = env_int("PUSH_CONCURRENCY", 200, 1, 5000)

# The registry (registry/): agents that register themselves live for a TTL their owner renews
# with heartbeats (a registration may ask for less than the maximum, never more). Expired
# ones leave the catalog at once and stop being served at the next sweep; they are deleted
# after the grace period. Registration bodies (cards) are refused past the size limit.
REGISTRY_DEFAULT_TTL_SECONDS = env_int("REGISTRY_DEFAULT_TTL_SECONDS", 300, 1, 365 * 86400)
REGISTRY_MAX_TTL_SECONDS = env_int("REGISTRY_MAX_TTL_SECONDS", 86400, 1, 365 * 86400)
REGISTRY_PURGE_AFTER_SECONDS = env_int("REGISTRY_PURGE_AFTER_SECONDS", 86400, 0, 365 * 86400)
REGISTRY_SWEEP_SECONDS = env_float("REGISTRY_SWEEP_SECONDS", 30.0, 0.1, 3600.0)
REGISTRY_MAX_BODY_BYTES = env_int("REGISTRY_MAX_BODY_BYTES", 512 * 1024, 1024, 16 * 1024 * 1024)
# Active health checks: a live registration's remote card is read at most this often (0: never;
# then health is only what heartbeats of card-URL registrations find).
REGISTRY_HEALTH_SECONDS = env_float("REGISTRY_HEALTH_SECONDS", 0.0, 0.0, 7 * 86400.0)
if REGISTRY_DEFAULT_TTL_SECONDS > REGISTRY_MAX_TTL_SECONDS:
    raise ImproperlyConfigured(
        f"REGISTRY_DEFAULT_TTL_SECONDS ({REGISTRY_DEFAULT_TTL_SECONDS}) must not be over "
        f"REGISTRY_MAX_TTL_SECONDS ({REGISTRY_MAX_TTL_SECONDS})"
    )

# Cards that come in (registry, import, a2a-remote) are checked for a signature
# (agents.card_trust): by a key listed here (a JWKS, or the path of a file holding one), or
# by the JWKS at the card's own origin. Required: unsigned or invalid cards are refused.
TRUSTED_CARD_KEYS = env_jwks("TRUSTED_CARD_KEYS")
CARD_SIGNATURES_REQUIRED = env_bool("CARD_SIGNATURES_REQUIRED", False)

# Retention (tasks.retention, push.retention): finished rows are deleted in the background,
# in short batches. 0 keeps them forever. Tasks are the callers' data, so keeping them is
# opt-in; deliveries are the operators' log of webhook traffic, the fastest-growing table.
TASK_RETENTION_DAYS = env_int("TASK_RETENTION_DAYS", 0, 0, 36500)
PUSH_DELIVERY_RETENTION_DAYS = env_int("PUSH_DELIVERY_RETENTION_DAYS", 7, 0, 36500)
RETENTION_BATCH_SIZE = env_int("RETENTION_BATCH_SIZE", 200, 1, 10_000)
if TASK_RETENTION_DAYS and TASK_RETENTION_DAYS * 86400 <= PUSH_RETRY_HORIZON_SECONDS:
    # A finished task's last deliveries may still be retrying; pruning it would drop them.
    raise ImproperlyConfigured(
        f"TASK_RETENTION_DAYS ({TASK_RETENTION_DAYS}) must be longer than "
        f"PUSH_RETRY_HORIZON_SECONDS ({PUSH_RETRY_HORIZON_SECONDS:g} seconds)"
    )

# The operators' API (operators_api/): its schema is generated by drf-spectacular from the code.
REST_FRAMEWORK = {"DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema"}
SPECTACULAR_SETTINGS = {
    "TITLE": "A2A Hub: the operators' API",
    "DESCRIPTION": "Agents and skills, API keys, tasks, push deliveries and registrations, for "
    "staff (a staff session, or a staff user's hub-wide API key as a bearer token).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "TaskStateEnum": "tasks.models.TaskState",
        "DeliveryStateEnum": "push.models.DeliveryState",
    },
    # The docs pages (Swagger UI) load their scripts and styles from the hub's own static
    # files (drf-spectacular-sidecar ships them), never from a CDN; no outside validator.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None, "docExpansion": "list"},
}
