//! The `brain` command line's commands and their arguments, as clap parses them.

use clap::{Parser, Subcommand};

use crate::config::{DatabaseConfig, JwtConfig, ServeConfig};

#[derive(Debug, Parser)]
#[command(
    name = "brain",
    version,
    about = "Durable working sessions for AI agents, over MCP"
)]
pub struct Cli {
    /// Log format: text or json.
    #[arg(long, env = "BRAIN_LOG_FORMAT", default_value = "text", global = true)]
    pub log_format: String,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Whether the command answers and exits (no server: `serve` and
    /// `stdio` are servers), so that its log holds errors only.
    pub fn is_one_shot(&self) -> bool {
        !matches!(self.command, Command::Serve(_) | Command::Stdio { .. })
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply migrations, then serve MCP over Streamable HTTP.
    Serve(Box<ServeConfig>),
    /// Apply pending database migrations and exit.
    Migrate(DatabaseConfig),
    /// Tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Receipts: verify a tenant's hash chain.
    #[command(subcommand)]
    Receipts(ReceiptsCommand),
    /// Tenants: what one holds; deleting one.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Projects: deleting one.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// Write everything of a tenant as one line of canonical JSON per row
    /// (receipts with their hashes included), to move it to another store.
    Export {
        #[arg(long)]
        tenant: String,
        /// The file to write (standard output when omitted).
        #[arg(short = 'o', long = "output")]
        output: Option<std::path::PathBuf>,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Read an export into this database's tenant of the same name, which must
    /// not exist yet: all of it in one transaction, or nothing.
    Import {
        #[arg(long)]
        tenant: String,
        /// The export to read (standard input when omitted).
        #[arg(short = 'i', long = "input")]
        input: Option<std::path::PathBuf>,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Print a link that opens the operator console signed in: a short-lived
    /// operator JWT in the URL's fragment (browsers never send a fragment).
    ConsoleLink {
        /// The tenant the console shows (claim `tenant`).
        #[arg(long)]
        tenant: String,
        /// The operator's subject (claim `sub`).
        #[arg(long)]
        sub: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 900)]
        ttl: u64,
        /// The server's public base URL.
        #[arg(
            long = "url",
            env = "BRAIN_PUBLIC_URL",
            default_value = "http://127.0.0.1:8080"
        )]
        public_url: String,
        #[command(flatten)]
        jwt: Box<JwtConfig>,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Exit 0 when the server's readiness endpoint answers 200 (container healthchecks).
    Healthcheck {
        #[arg(long, default_value = "http://127.0.0.1:8080/readyz")]
        url: String,
    },
    /// Serve the same tools over stdin/stdout for one local user (logs go to stderr).
    Stdio {
        /// The tenant every call acts in.
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Print a development HS256 JWT. Signed with BRAIN_JWT_HS256_SECRET, or,
    /// when that is unset, with the secret `serve --dev` keeps beside the database.
    Mint {
        /// The tenant the token acts in (claim `tenant`).
        #[arg(long)]
        tenant: String,
        /// Who the token names (claim `sub`); with the issuer, the credential's identity.
        #[arg(long)]
        sub: String,
        /// agent, operator or relay.
        #[arg(long, default_value = "agent")]
        role: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
        #[command(flatten)]
        jwt: Box<JwtConfig>,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Shared tokens: one opaque token used by many agents of a tenant.
    #[command(subcommand)]
    Shared(SharedCommand),
}

#[derive(Debug, Subcommand)]
pub enum ReceiptsCommand {
    /// Walk the tenant's chain: OK with the count and tip, or the first bad seq
    /// and why (hash_mismatch, prev_hash_mismatch, seq_gap); non-zero exit when bad.
    Verify {
        /// The tenant whose chain is walked; an unknown tenant is an error.
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// Delete a project: every body and text of it (focus and slot revisions,
    /// sessions, artifacts, documents). Its receipts stay, and a
    /// `project_deleted` receipt (credential kind `cli`) records the deletion.
    Delete {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        project: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Delete everything of a tenant, its receipts included. `--confirm` must
    /// repeat the tenant's name.
    Delete {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        confirm: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Print the bytes of bodies and texts the tenant holds and the quota
    /// (BRAIN_TENANT_QUOTA_BYTES as the server last wrote it; 0 = unlimited).
    Usage {
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
}

#[derive(Debug, Subcommand)]
pub enum SharedCommand {
    /// Create a token and print it once; only its hash is stored.
    Create {
        /// The tenant the token's callers act in.
        #[arg(long)]
        tenant: String,
        /// A name for the token, unique among the tenant's live tokens.
        #[arg(long)]
        name: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Revoke the live token with this name.
    Revoke {
        /// The tenant that holds the token.
        #[arg(long)]
        tenant: String,
        /// The name given at create.
        #[arg(long)]
        name: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// List the tenant's tokens (never their secrets).
    List {
        /// The tenant whose tokens are listed.
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
}
