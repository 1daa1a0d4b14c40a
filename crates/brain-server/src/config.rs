//! Configuration: flags and `BRAIN_*` environment variables (SPEC §7), with
//! defaults. Loading configuration never writes files.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

/// A secret whose `Debug` never shows the value.
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_owned()))
    }
}

/// JWT validation settings shared by `serve` and `token mint`.
#[derive(Debug, Clone, Args)]
pub struct JwtConfig {
    /// Shared secret for HS256 JWTs (development, tests).
    #[arg(
        long = "jwt-hs256-secret",
        env = "BRAIN_JWT_HS256_SECRET",
        hide_env_values = true
    )]
    pub hs256_secret: Option<Secret>,
    /// PEM file or JWKS JSON file of RS256/ES256 public keys (production).
    #[arg(long = "jwt-public-keys", env = "BRAIN_JWT_PUBLIC_KEYS")]
    pub public_keys: Option<PathBuf>,
    /// Required `iss` claim.
    #[arg(long = "jwt-issuer", env = "BRAIN_JWT_ISSUER", default_value = "brain")]
    pub issuer: String,
    /// Required `aud` claim.
    #[arg(
        long = "jwt-audience",
        env = "BRAIN_JWT_AUDIENCE",
        default_value = "brain"
    )]
    pub audience: String,
    #[command(flatten)]
    pub claims: ClaimMapping,
    #[command(flatten)]
    pub jwks: JwksConfig,
}

/// The organization's identity provider: its published keys, and the issuer
/// and audience of its tokens (brain's own HS256 tokens keep
/// `BRAIN_JWT_ISSUER` and `BRAIN_JWT_AUDIENCE`).
#[derive(Debug, Clone, Args)]
pub struct JwksConfig {
    /// The provider's JWK set (HTTPS; HTTP only for localhost), fetched at
    /// start and kept fresh.
    #[arg(long = "jwt-jwks-url", env = "BRAIN_JWT_JWKS_URL")]
    pub jwks_url: Option<String>,
    /// Required `iss` of the provider's tokens (default BRAIN_JWT_ISSUER).
    #[arg(long = "jwt-jwks-issuer", env = "BRAIN_JWT_JWKS_ISSUER")]
    pub jwks_issuer: Option<String>,
    /// Required `aud` of the provider's tokens (default BRAIN_JWT_AUDIENCE).
    #[arg(long = "jwt-jwks-audience", env = "BRAIN_JWT_JWKS_AUDIENCE")]
    pub jwks_audience: Option<String>,
    /// The set is fetched again at most this often, whatever key ids tokens
    /// name, and kept at least this long.
    #[arg(
        long = "jwt-jwks-min-refresh-secs",
        env = "BRAIN_JWT_JWKS_MIN_REFRESH_SECS",
        default_value_t = 60
    )]
    pub jwks_min_refresh_secs: u64,
}

impl Default for JwksConfig {
    fn default() -> Self {
        Self {
            jwks_url: None,
            jwks_issuer: None,
            jwks_audience: None,
            jwks_min_refresh_secs: 60,
        }
    }
}

/// Where an identity provider puts the tenant and the role in its tokens.
#[derive(Debug, Clone, Args)]
pub struct ClaimMapping {
    /// The claim that holds the tenant: a top-level name (a namespaced one
    /// such as `https://example.com/claims/tenant` too), a dotted path
    /// (`org.id`) or a JSON pointer (`/org/id`). A string or an integer.
    #[arg(
        long = "jwt-tenant-claim",
        env = "BRAIN_JWT_TENANT_CLAIM",
        default_value = "tenant"
    )]
    pub tenant_claim: String,
    /// The claim that holds the role (or the groups), found as the tenant's.
    #[arg(
        long = "jwt-role-claim",
        env = "BRAIN_JWT_ROLE_CLAIM",
        default_value = "role"
    )]
    pub role_claim: String,
    /// The provider's roles or groups as brain's: `admins=operator,ci=relay`.
    /// With a map, the role claim may be a string or a list; the highest
    /// mapped role counts (operator, then relay), anything unmapped is
    /// `agent`, never `operator`. Without one, the claim must name brain's
    /// role itself (`agent`, `operator`, `relay`) or be absent (`agent`).
    #[arg(long = "jwt-role-map", env = "BRAIN_JWT_ROLE_MAP")]
    pub role_map: Option<String>,
}

impl Default for ClaimMapping {
    fn default() -> Self {
        Self {
            tenant_claim: "tenant".into(),
            role_claim: "role".into(),
            role_map: None,
        }
    }
}

/// Everything `brain serve` needs.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address of the front door.
    #[arg(long, env = "BRAIN_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub database: DatabaseConfig,
    #[command(flatten)]
    pub jwt: JwtConfig,
    /// This resource's public URL, for RFC 9728 metadata (default `http://<listen>`).
    #[arg(long, env = "BRAIN_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Allowed `Host` values for /mcp (comma-separated; an entry without a port matches any port).
    #[arg(
        long,
        env = "BRAIN_ALLOWED_HOSTS",
        value_delimiter = ',',
        default_value = "localhost,127.0.0.1,::1"
    )]
    pub allowed_hosts: Vec<String>,
    /// Allowed `Origin` values (comma-separated; `:*` matches any port). No `Origin` passes.
    #[arg(
        long,
        env = "BRAIN_ALLOWED_ORIGINS",
        value_delimiter = ',',
        default_value = "http://localhost:*,http://127.0.0.1:*"
    )]
    pub allowed_origins: Vec<String>,
    /// Seconds after which an open session is reported idle.
    #[arg(long, env = "BRAIN_SESSION_IDLE_SECS", default_value_t = 21_600)]
    pub session_idle_secs: i64,
    /// One-command local start: a generated HS256 secret kept beside the database,
    /// and a ready-to-paste MCP client configuration with a fresh token on stdout.
    #[arg(long)]
    pub dev: bool,
    /// Serve `GET /metrics` on this address instead of the front door, so it is
    /// never exposed by accident.
    #[arg(long, env = "BRAIN_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// On PostgreSQL, answer `brain_focus_get` and focus resources from this
    /// replica's memory, kept current by LISTEN/NOTIFY (docs/architecture.md, Focus reads from memory);
    /// `false` reads the database every time.
    #[arg(long, env = "BRAIN_FOCUS_MEMORY", default_value_t = true, action = clap::ArgAction::Set)]
    pub focus_memory: bool,
    /// On PostgreSQL, the most pooled database connections this replica
    /// opens (focus memory's listener holds one of them for good, so at
    /// least 2; its fence opens one more of its own).
    #[arg(long, env = "BRAIN_DB_POOL_SIZE", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub db_pool_size: u32,
    /// On SIGTERM/SIGINT, how long in-flight calls may take before connections are cut.
    #[arg(long, env = "BRAIN_SHUTDOWN_GRACE_SECS", default_value_t = 10)]
    pub shutdown_grace_secs: u64,
    /// How often the daily-brief scheduler looks for projects without today's brief.
    #[arg(long, env = "BRAIN_BRIEF_INTERVAL_SECS", default_value_t = 900)]
    pub brief_interval_secs: u64,
    /// Longest elevation an operator may grant, in seconds.
    #[arg(long, env = "BRAIN_ELEVATION_MAX_SECS", default_value_t = 3_600)]
    pub elevation_max_secs: i64,
    /// Seconds an MCP connection may stay unused before the server forgets it.
    #[arg(long, env = "BRAIN_CONNECTION_IDLE_SECS", default_value_t = 1_800)]
    pub connection_idle_secs: u64,
    /// Bytes of bodies and texts each tenant may hold (artifacts, every focus
    /// revision, documents, sessions' texts); a write past it is refused with
    /// `quota_exceeded`. 0 = unlimited. Written to the database at start:
    /// every replica should set the same.
    #[arg(
        long,
        env = "BRAIN_TENANT_QUOTA_BYTES",
        default_value_t = 1_073_741_824
    )]
    pub tenant_quota_bytes: i64,
    /// Requests per second each credential may make on /mcp (token bucket,
    /// burst twice this); 0 turns the limit off.
    #[arg(long, env = "BRAIN_RATE_LIMIT_PER_SEC", default_value_t = 50)]
    pub rate_limit_per_sec: u32,
    /// Open MCP connections each credential may hold; an initialize beyond it gets 429.
    #[arg(
        long,
        env = "BRAIN_MAX_CONNECTIONS_PER_CREDENTIAL",
        default_value_t = 64
    )]
    pub max_connections_per_credential: i64,
    /// Open MCP connections each tenant may hold, across all its credentials.
    #[arg(
        long,
        env = "BRAIN_MAX_CONNECTIONS_PER_TENANT",
        default_value_t = 1_024
    )]
    pub max_connections_per_tenant: i64,
    /// Requests each credential may have in flight on /mcp at once on this
    /// replica, open SSE streams and bodies still arriving included; more get 429.
    #[arg(
        long,
        env = "BRAIN_MAX_IN_FLIGHT_PER_CREDENTIAL",
        default_value_t = 128
    )]
    pub max_in_flight_per_credential: usize,
    /// MCP connections this replica holds in memory; an initialize beyond it gets 429.
    #[arg(long, env = "BRAIN_MAX_CONNECTIONS", default_value_t = 8_192)]
    pub max_connections: usize,
    /// Open sockets the front door accepts at once; more wait in the kernel's backlog.
    #[arg(long, env = "BRAIN_MAX_SOCKETS", default_value_t = 4_096)]
    pub max_sockets: usize,
    /// Tool sets to offer, comma-separated: brain (brain's own), brain-core, aziel
    /// (the seed servers' tools, as adapters over the same core).
    #[arg(long, env = "BRAIN_TOOL_PROFILES", default_value = "brain")]
    pub tool_profiles: String,
    /// Seconds a client has to send a request's headers before its socket is closed.
    #[arg(long, env = "BRAIN_HEADER_TIMEOUT_SECS", default_value_t = 10)]
    pub header_timeout_secs: u64,
}

#[derive(Debug, Clone, Args)]
pub struct DatabaseConfig {
    /// `sqlite://PATH` (the embedded default; the file is created if missing) or `postgres://…`.
    #[arg(
        long = "database-url",
        env = "DATABASE_URL",
        default_value = "sqlite://./brain.db",
        hide_env_values = true
    )]
    pub url: String,
}

impl ServeConfig {
    pub fn public_url(&self) -> String {
        match &self.public_url {
            Some(u) => u.trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.listen),
        }
    }
}
