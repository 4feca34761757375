//! Command line and configuration (clap). Every flag can also come from an environment
//! variable (`WEARHOUSE_...`), read once at start-up.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::rate_limit;

/// wearhouse: health-data service.
#[derive(Debug, Parser)]
#[command(name = "wearhouse", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once at start-up and held on main's stack: `serve`'s many flags cost nothing there.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API.
    Serve(ServeArgs),
    /// Run a worker of distributed queries (`serve --workers` sends it stages; it reads the
    /// API nodes' object store itself).
    Worker(WorkerArgs),
    /// Manage teams.
    Team {
        /// The team operation.
        #[command(subcommand)]
        command: TeamCommand,
    },
    /// Inspect a team's continuous queries (`cq list|show|validate`).
    Cq {
        /// The operation.
        #[command(subcommand)]
        command: CqCommand,
    },
    /// Manage a team's API keys (the secret is printed by create and rotate only).
    Keys {
        /// The key operation.
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Push a file in the push API's shape (`POST /v2/user/{user_id}/data`) for one user.
    Import {
        /// Team id or name.
        #[arg(long)]
        team: String,
        /// User id, or the team's client user id.
        #[arg(long)]
        user: String,
        /// The JSON file.
        file: PathBuf,
        /// Where data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Demo data.
    Demo {
        /// The demo operation.
        #[command(subcommand)]
        command: DemoCommand,
    },
    /// Laboratory testing operations.
    Lab {
        /// The lab operation.
        #[command(subcommand)]
        command: LabCommand,
    },
    /// Run an aggregate request file for one user and print the answer.
    Query {
        /// User id (or client user id with --team).
        #[arg(long)]
        user: String,
        /// Team id or name (needed only to resolve a client user id).
        #[arg(long)]
        team: Option<String>,
        /// The request JSON file.
        request: PathBuf,
        /// `json` (printed) or `parquet` (a gzipped tar of N.parquet, written to --out).
        #[arg(long, default_value = "json")]
        format: String,
        /// Where to write the answer (default: standard output; required for parquet).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Where data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Demo data operations.
#[derive(Debug, Subcommand)]
pub enum DemoCommand {
    /// Write the demo generator's data as Parquet, one file per dataset (for benches and notebooks).
    Generate {
        /// Days of history, ending today.
        #[arg(long, default_value_t = 90)]
        days: u32,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Demo providers to generate (repeatable).
        #[arg(long = "provider", default_values_t = ["oura".to_owned(), "apple_health_kit".to_owned()])]
        providers: Vec<String>,
        /// regular, traveller or athlete.
        #[arg(long, default_value = "regular")]
        persona: String,
        /// Generator seed: the same seed gives the same data.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Last day (default: today, UTC).
        #[arg(long)]
        end: Option<chrono::NaiveDate>,
    },
}

/// Laboratory testing operations.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Load labs' patient service centres from a CSV file (header: lab_slug, site_code, name,
    /// first_line, city, state, zip_code, and optionally lat, lng, phone_number, capabilities);
    /// each lab named in the file gets exactly the file's centres instead of its sandbox network.
    /// Running servers use them after a restart.
    ImportPscs {
        /// The CSV file.
        file: PathBuf,
        /// Where the data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Continuous-query operations (`analytics.md` §4), printing what the API answers.
#[derive(Debug, Subcommand)]
pub enum CqCommand {
    /// The team's continuous queries, one per line: id, slug, status, evaluated/users, title.
    List {
        /// Team id or name.
        #[arg(long)]
        team: String,
        /// Where the data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// One continuous query (by id or slug) as `GET /aggregate/v1/continuous_query/{id}` shows it.
    Show {
        /// Team id or name.
        #[arg(long)]
        team: String,
        /// The query's id or slug.
        query: String,
        /// Where the data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Dry-runs a registration body from a JSON file: its result table schema and dependencies,
    /// or what is wrong with it.
    Validate {
        /// The `POST /aggregate/v1/continuous_query` body.
        file: PathBuf,
    },
}

/// Team operations.
#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team and print its id and API key.
    Create {
        /// The team's name.
        name: String,
        /// Where the data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List teams.
    List {
        /// Where the data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// A team's API key operations, as `/v2/team/keys` does them.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// List the team's keys, oldest first (id, name, status, hint, created, last used, expires,
    /// revoked; `-` when unset), never a secret.
    List {
        /// Team id or name.
        #[arg(long)]
        team: String,
        /// Where the data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Create a key and print its id and secret (shown only now).
    Create {
        /// Team id or name.
        #[arg(long)]
        team: String,
        /// The key's name (1 to 100 characters).
        #[arg(long)]
        name: String,
        /// Where the data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Revoke a key: it answers 401 from the next request on, on every server.
    Revoke {
        /// Team id or name.
        #[arg(long)]
        team: String,
        /// The key's id.
        key_id: uuid::Uuid,
        /// Where the data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Replace a key with a new one of the same name and print the new secret; the old key
    /// keeps working for the overlap.
    Rotate {
        /// Team id or name.
        #[arg(long)]
        team: String,
        /// The key's id.
        key_id: uuid::Uuid,
        /// How long the old key keeps working, in seconds (0 to 2592000).
        #[arg(long, default_value_t = crate::keys::DEFAULT_OVERLAP_SECONDS)]
        overlap_seconds: i64,
        /// Where the data lives.
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Where data lives.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Directory for the SQLite database, the Parquet store and the demo key.
    #[arg(long, env = "WEARHOUSE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Metadata database URL (`sqlite://...` or `postgres://...`); default: a SQLite file in the data dir.
    #[arg(long, env = "WEARHOUSE_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Health-data location (`file:///abs/path`); default: `<data-dir>/health`.
    #[arg(long, env = "WEARHOUSE_OBJECT_STORE_URL")]
    pub object_store_url: Option<String>,
    /// How long after a write its dataset is compacted, in seconds (writes meanwhile are merged
    /// in the same run).
    #[arg(long, env = "WEARHOUSE_COMPACTION_DELAY_SECS", default_value_t = 30)]
    pub compaction_delay_secs: u64,
    /// On object storage, how long a compaction's merged inputs are kept (hidden) for readers in
    /// other processes that listed them before it, in seconds.
    #[arg(long, env = "WEARHOUSE_COMPACTION_GRACE_SECS", default_value_t = 300)]
    pub compaction_grace_secs: u64,
    /// The health store's read cache, in MiB of decoded Arrow memory (0 disables it). A team
    /// query reads every user's data: size it to hold the data a team's queries read, or each
    /// read decodes its segments again (`README.md`, Performance).
    #[arg(long, env = "WEARHOUSE_STORE_CACHE_MB", default_value_t = 512)]
    pub store_cache_mb: usize,
}

impl StoreArgs {
    /// The metadata database URL in force.
    pub fn database_url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| {
            format!(
                "sqlite://{}?mode=rwc",
                self.data_dir.join("wearhouse.db").display()
            )
        })
    }
}

/// `wearhouse worker`.
#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    /// Address to serve the API nodes' stages on.
    #[arg(
        long,
        env = "WEARHOUSE_WORKER_LISTEN",
        default_value = "127.0.0.1:50051"
    )]
    pub listen: SocketAddr,
    /// The health store the API nodes write (`s3://bucket/prefix`, `gs://...`, `az://...`;
    /// configured from the environment as for `serve`). A local directory works only when every
    /// process runs on this machine.
    #[arg(long, env = "WEARHOUSE_OBJECT_STORE_URL")]
    pub object_store_url: String,
    /// Memory every stage running here at once may hold, in MiB.
    #[arg(long, env = "WEARHOUSE_WORKER_MEMORY_MB", default_value_t = 4096)]
    pub memory_mb: usize,
    // The API nodes' shared secret is `WEARHOUSE_WORKER_TOKEN` (`worker_token`).
}

/// The environment variable holding the secret every plan sent to workers carries (read from
/// the environment only, never a flag: a flag shows in process listings).
pub const WORKER_TOKEN_ENV: &str = "WEARHOUSE_WORKER_TOKEN";

/// The shared worker token from the environment: present and at least 16 characters.
pub fn worker_token() -> anyhow::Result<String> {
    match std::env::var(WORKER_TOKEN_ENV).ok() {
        Some(t) if t.len() >= 16 => Ok(t),
        Some(_) => anyhow::bail!("WEARHOUSE_WORKER_TOKEN must be at least 16 characters"),
        None => anyhow::bail!(
            "WEARHOUSE_WORKER_TOKEN is not set: workers and the API nodes that use them share it"
        ),
    }
}

/// `wearhouse serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "WEARHOUSE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Create (on first start) and print the demo team and its API key.
    #[arg(long, env = "WEARHOUSE_DEMO")]
    pub demo: bool,
    /// Days of history the demo users get on the first demo start.
    #[arg(long, env = "WEARHOUSE_DEMO_DAYS", default_value_t = 90)]
    pub demo_days: u32,
    /// How long a deleted user can be restored with `POST /v2/user/undo_delete`, in seconds;
    /// its data is removed once it is over (default 7 days).
    #[arg(long, env = "WEARHOUSE_USER_UNDO_WINDOW_SECS", default_value_t = crate::http::USER_UNDO_WINDOW.as_secs())]
    pub user_undo_window_secs: u64,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "WEARHOUSE_BODY_LIMIT", default_value_t = 16 * 1024 * 1024)]
    pub body_limit: usize,
    /// Most samples one timeseries getter answer holds; the rest pages by cursor
    /// (`x-next-cursor` on `/v2/timeseries/...`, `next_cursor` on `.../grouped`).
    #[arg(long, env = "WEARHOUSE_GETTER_MAX_ROWS", default_value_t = crate::render::PageLimits::DEFAULT_ROWS as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub getter_max_rows: u64,
    /// Most bytes of samples one timeseries getter answer holds (at least one sample is always
    /// answered); the rest pages by cursor.
    #[arg(long, env = "WEARHOUSE_GETTER_MAX_BYTES", default_value_t = crate::render::PageLimits::DEFAULT_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub getter_max_bytes: u64,
    /// Time limit of one aggregate request, and of one summary or timeseries getter, in seconds
    /// (then 504, the work cancelled).
    #[arg(long, env = "WEARHOUSE_QUERY_TIMEOUT_SECS", default_value_t = 30)]
    pub query_timeout_secs: u64,
    /// Memory limit of one aggregate request's execution, in MiB.
    #[arg(long, env = "WEARHOUSE_QUERY_MEMORY_MB", default_value_t = 1024)]
    pub query_memory_mb: usize,
    /// Serve Arrow Flight SQL (gRPC) for notebooks and BI tools on this address as well
    /// (`src/flight/`; off unless given). The API key is the credential.
    #[arg(long, env = "WEARHOUSE_FLIGHT_LISTEN")]
    pub flight_listen: Option<SocketAddr>,
    /// Team queries (`POST /aggregate/v1/team/query`) one team may run at once on this
    /// process; the next is a 429 with `Retry-After` until one ends.
    #[arg(long, env = "WEARHOUSE_TEAM_QUERY_CONCURRENCY", default_value_t = crate::http::TEAM_QUERY_CONCURRENCY,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub team_query_concurrency: u64,
    /// Workers (`host:port` of `wearhouse worker` processes, comma-separated) that run the
    /// large Flight SQL statements of this API node (`src/distributed/`); needs the health
    /// store on object storage, the same one the workers read, and `WEARHOUSE_WORKER_TOKEN`
    /// (the secret every plan carries, at least 16 characters, from the environment only).
    #[arg(
        long,
        env = "WEARHOUSE_WORKERS",
        value_delimiter = ',',
        requires = "flight_listen"
    )]
    pub workers: Vec<String>,
    /// With `--workers`: a statement is distributed when a view it scans holds at least this
    /// many MiB of stored Parquet (smaller ones run here); 0 distributes every scan.
    #[arg(long, env = "WEARHOUSE_DISTRIBUTE_ABOVE_MB", default_value_t = 256)]
    pub distribute_above_mb: u64,
    /// How long a background job stays claimed by this process without a renewal: when the
    /// process dies, another one takes its jobs over after this many seconds. Renewed every
    /// third of it.
    #[arg(long, env = "WEARHOUSE_JOB_LEASE_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(3..))]
    pub job_lease_secs: u64,
    /// On SIGTERM or SIGINT: how long in-flight requests may take to finish, and running jobs
    /// to end, before the process stops anyway (requests still open then are cut, jobs still
    /// running are handed back with their lease released, so another process takes them at
    /// once). New connections are refused from the signal on.
    #[arg(long, env = "WEARHOUSE_SHUTDOWN_GRACE_SECS", default_value_t = 30)]
    pub shutdown_grace_secs: u64,
    /// Allow webhook endpoints on `http` and on private, loopback and link-local addresses
    /// (development and tests; refused by default against server-side request forgery).
    #[arg(long, env = "WEARHOUSE_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: bool,
    /// The key provider credentials are sealed with at rest: 64 hexadecimal digits (32 random
    /// bytes, e.g. `openssl rand -hex 32`). Without it, `--demo` generates one and keeps it in
    /// the data dir (`secret-key`, mode 0600), and otherwise a key kept there is used.
    #[arg(long, env = "WEARHOUSE_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    /// The URL clients reach this service at (link pages, `link_web_url`); default
    /// `http://<listen>`.
    #[arg(long, env = "WEARHOUSE_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// `<app scheme>://<app host>` of the mobile app that exchanges link codes.
    #[arg(
        long,
        env = "WEARHOUSE_LINK_APP_URL",
        default_value = "wearhouse://link"
    )]
    pub link_app_url: String,
    /// The deployment's region, carried by link codes.
    #[arg(long, env = "WEARHOUSE_REGION", value_enum, default_value = "us")]
    pub region: crate::link::Region,
    /// A JSON file of OAuth applications by provider slug: `{"oura": {"client_id",
    /// "client_secret", "authorize_url", "token_url"}}`.
    #[arg(long, env = "WEARHOUSE_OAUTH_APPS")]
    pub oauth_apps: Option<std::path::PathBuf>,
    /// Export traces over OTLP/HTTP (protobuf bodies) to the collector at this URL, e.g.
    /// `http://127.0.0.1:4318` (spans are sent to its `/v1/traces`), batched, with
    /// `service.name=wearhouse`; off by default.
    #[arg(long, env = "WEARHOUSE_OTLP_ENDPOINT", value_parser = otlp_endpoint)]
    pub otlp_endpoint: Option<url::Url>,
    /// Request budgets (token buckets, in this process's memory: N processes allow N times
    /// the budget).
    #[command(flatten)]
    pub rate_limits: RateLimitArgs,
    /// Where data lives.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `serve`'s request budgets, per API key, per team and for a team's aggregate queries: a
/// rate in requests per second (fractions allowed; 0 disables that budget) and a burst.
/// Refused requests answer 429 with `Retry-After`.
#[derive(Debug, Clone, Args)]
pub struct RateLimitArgs {
    /// Requests per second of one API key (0: no per-key limit).
    #[arg(long, env = "WEARHOUSE_RATE_LIMIT_RPS", default_value_t = rate_limit::DEFAULT_KEY.per_second,
          value_parser = rate)]
    pub rate_limit_rps: f64,
    /// Requests one API key may make at once (the bucket's capacity).
    #[arg(long, env = "WEARHOUSE_RATE_LIMIT_BURST", default_value_t = rate_limit::DEFAULT_KEY.burst,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_burst: u32,
    /// Requests per second of one team, all its keys together (0: no per-team limit).
    #[arg(long, env = "WEARHOUSE_TEAM_RATE_LIMIT_RPS", default_value_t = rate_limit::DEFAULT_TEAM.per_second,
          value_parser = rate)]
    pub team_rate_limit_rps: f64,
    /// Requests one team may make at once.
    #[arg(long, env = "WEARHOUSE_TEAM_RATE_LIMIT_BURST", default_value_t = rate_limit::DEFAULT_TEAM.burst,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub team_rate_limit_burst: u32,
    /// Aggregate queries per second of one team, charged besides the budgets above (0: no
    /// query limit).
    #[arg(long, env = "WEARHOUSE_QUERY_RATE_LIMIT_RPS", default_value_t = rate_limit::DEFAULT_QUERY.per_second,
          value_parser = rate)]
    pub query_rate_limit_rps: f64,
    /// Aggregate queries one team may send at once.
    #[arg(long, env = "WEARHOUSE_QUERY_RATE_LIMIT_BURST", default_value_t = rate_limit::DEFAULT_QUERY.burst,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub query_rate_limit_burst: u32,
}

impl RateLimitArgs {
    /// The budgets these flags give.
    pub fn limits(&self) -> rate_limit::RateLimits {
        use rate_limit::Budget;
        rate_limit::RateLimits {
            key: Budget::new(self.rate_limit_rps, self.rate_limit_burst),
            team: Budget::new(self.team_rate_limit_rps, self.team_rate_limit_burst),
            query: Budget::new(self.query_rate_limit_rps, self.query_rate_limit_burst),
        }
    }
}

/// A rate: a finite number of requests per second, at least 0.
fn rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err(format!(
            "{text:?} is not a rate (requests per second, 0 or more)"
        )),
    }
}

/// An OTLP/HTTP endpoint: an absolute `http` or `https` URL.
fn otlp_endpoint(text: &str) -> Result<url::Url, String> {
    match url::Url::parse(text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(url),
        _ => Err(format!(
            "{text:?} is not an http(s) URL of an OTLP collector (e.g. http://127.0.0.1:4318)"
        )),
    }
}
