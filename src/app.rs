//! Start-up: open the stores named by the configuration, prepare demo mode, start the job
//! runner, and run the server until SIGINT or SIGTERM (then the runner finishes or releases its
//! jobs).

use std::path::Path;

use anyhow::Context;

use crate::config::{ServeArgs, StoreArgs};
use crate::http::{AppState, HttpConfig};
use crate::store::health::{HealthStore, StoreOptions};
use crate::store::metadata::MetadataStore;

/// Name of the file in the data dir that keeps the demo team's key (mode 0600).
pub const DEMO_KEY_FILE: &str = "demo-api-key";

/// Name of the file in the data dir that keeps the generated secret key (mode 0600).
pub const SECRET_KEY_FILE: &str = "secret-key";

/// The key provider credentials are sealed with: `--secret-key`; else, with `--demo`, the one
/// kept in the data dir (generated on first start); else one kept there earlier; else none
/// (links that store credentials then fail, and the log says why).
pub fn secret_key(args: &ServeArgs) -> anyhow::Result<Option<crate::secret::SecretKey>> {
    use crate::secret::SecretKey;
    if let Some(text) = &args.secret_key {
        return Ok(Some(
            SecretKey::from_hex(text).context("reading --secret-key / WEARHOUSE_SECRET_KEY")?,
        ));
    }
    let path = args.store.data_dir.join(SECRET_KEY_FILE);
    if args.demo || path.exists() {
        return Ok(Some(SecretKey::load_or_create(&path)?));
    }
    tracing::warn!(
        "no --secret-key: provider links that store credentials are refused until one is set"
    );
    Ok(None)
}

/// Opens the metadata store, creating the data dir if needed.
pub async fn open_metadata(store: &StoreArgs) -> anyhow::Result<MetadataStore> {
    std::fs::create_dir_all(&store.data_dir)
        .with_context(|| format!("creating data dir {}", store.data_dir.display()))?;
    let url = store.database_url();
    MetadataStore::connect(&url)
        .await
        .with_context(|| format!("opening metadata database {url}"))
}

/// Opens the health-data store (`--object-store-url`, else `<data-dir>/health`). A store on
/// object storage may be shared by several processes, so it keeps its dataset versions in the
/// metadata database `meta` (see `store::health`'s `shared.rs`); a local directory belongs to
/// one process and does without.
pub fn open_health(store: &StoreArgs, meta: &MetadataStore) -> anyhow::Result<HealthStore> {
    let location = store
        .object_store_url
        .clone()
        .unwrap_or_else(|| store.data_dir.join("health").display().to_string());
    let options = StoreOptions {
        compaction_delay: std::time::Duration::from_secs(store.compaction_delay_secs),
        retired_grace: std::time::Duration::from_secs(store.compaction_grace_secs),
        cache_bytes: store.store_cache_mb.saturating_mul(1024 * 1024),
        ..StoreOptions::default()
    };
    let health = HealthStore::open(&location, options)
        .with_context(|| format!("opening health store {location}"))?;
    if health.root().is_none() {
        health.share_versions(std::sync::Arc::new(meta.clone()));
    }
    Ok(health)
}

/// Builds the state every handler shares.
pub async fn open_state(args: &ServeArgs) -> anyhow::Result<AppState> {
    let meta = open_metadata(&args.store).await?;
    let health = open_health(&args.store, &meta)?;
    health
        .check()
        .await
        .context("reaching the health store (--object-store-url)")?;
    let config = HttpConfig {
        body_limit: args.body_limit,
        query_limits: crate::engine::Limits {
            timeout: std::time::Duration::from_secs(args.query_timeout_secs),
            memory_limit_bytes: args.query_memory_mb.saturating_mul(1024 * 1024),
            ..crate::engine::Limits::default()
        },
        getter_limits: crate::ingest::PageLimits {
            rows: usize::try_from(args.getter_max_rows).unwrap_or(usize::MAX),
            bytes: usize::try_from(args.getter_max_bytes).unwrap_or(usize::MAX),
        },
        rate_limits: args.rate_limits.limits(),
        user_undo_window: std::time::Duration::from_secs(args.user_undo_window_secs),
        team_query_concurrency: usize::try_from(args.team_query_concurrency).unwrap_or(usize::MAX),
    };
    let rules = crate::events::UrlRules {
        allow_private: args.webhook_allow_private,
    };
    let connectors = crate::sync::Connectors::from_env().context("building provider connectors")?;
    let mut state = AppState::new(meta, health, config)?
        .with_webhook_rules(rules)
        .with_connectors(connectors);
    if let Some(key) = secret_key(args)? {
        state = state.with_secret_key(key);
    }
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", args.listen));
    state = state.with_link_config(crate::link::LinkConfig {
        public_url: public_url.trim_end_matches('/').to_owned(),
        app_url: args.link_app_url.clone(),
        region: args.region,
        oauth_apps: match &args.oauth_apps {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                crate::link::oauth::OAuthApps::from_json(&text)
                    .map_err(anyhow::Error::msg)
                    .with_context(|| format!("reading {}", path.display()))?
            }
            None => crate::link::oauth::OAuthApps::default(),
        },
        oauth_endpoints: crate::link::team_apps::Endpoints::default(),
        password: crate::link::password::PasswordLogins::from_env()
            .context("building the password providers' HTTP client")?,
        email: crate::link::email::EmailLinks::from_env()
            .context("building the e-mail providers' HTTP client")?,
        demo: args.demo,
    });
    state
        .lab
        .load_pscs(&state.meta)
        .await
        .context("loading imported patient service centres")?;
    Ok(state)
}

/// How to register a webhook endpoint on this server (printed by `serve --demo`).
pub fn webhook_hint(addr: &std::net::SocketAddr, key: &str, args: &ServeArgs) -> String {
    let example = if args.webhook_allow_private {
        "http://127.0.0.1:9000/webhooks"
    } else {
        "https://your-receiver.example.com/webhooks"
    };
    format!(
        "receive events: register a webhook endpoint (its signing secret is in the answer):\n  \
         curl -X POST http://{addr}/v2/team/webhooks -H 'x-service-api-key: {key}' \\\n    \
         -H 'content-type: application/json' -d '{{\"url\": \"{example}\"}}'\n  \
         (http and local receivers need --webhook-allow-private; see README \"Receiving events\")"
    )
}

/// The job kinds this process runs: compaction, announcing pushes, webhook delivery, event
/// retention, the asynchronous wait of lab appointment bookings, the activation of scheduled
/// lab orders, historical pulls from providers, bulk imports of connections, continuous-query
/// evaluations and their backfills.
pub fn job_registry(state: &AppState) -> crate::jobs::Registry {
    let registry = crate::jobs::Registry::new()
        .register(crate::jobs::compaction::Compaction::new(
            state.health.clone(),
        ))
        .register(crate::data::announce::Announcer::new(state.health.clone()))
        .register(crate::jobs::erasure::Eraser::new(
            state.meta.clone(),
            state.health.clone(),
        ))
        .register(crate::events::retention::Pruner)
        .register(crate::jobs::prune::Pruner)
        .register(crate::lab::appointments::confirm::Confirmer)
        .register(crate::lab::orders::activation::Activator)
        .register(crate::continuous::Evaluator::new(
            state.health.clone(),
            state.engine.clone(),
        ))
        .register(crate::continuous::Backfill);
    let registry = match crate::sync::pull::Puller::new(
        state.health.clone(),
        state.connectors.clone(),
        state.secret.clone(),
        state.link.clone(),
    ) {
        Ok(puller) => {
            let puller = puller.with_metrics(state.metrics.clone());
            registry
                .register(crate::sync::pull::HistoricalPuller(puller.clone()))
                .register(crate::sync::pull::IncrementalPuller(puller))
        }
        Err(error) => {
            // Without an HTTP client pulls wait (their jobs retry) until a process has one.
            tracing::error!(%error, "no HTTP client for provider pulls");
            registry
        }
    };
    let importer =
        crate::link::bulk_import::job::Importer::new(state.secret.clone(), state.link.clone());
    let registry = match importer {
        Ok(importer) => registry.register(importer),
        Err(error) => {
            // Without an HTTP client bulk imports wait (their jobs retry) until a process has one.
            tracing::error!(%error, "no HTTP client for bulk imports");
            registry
        }
    };
    let registry = registry.register(crate::link::bulk_ops::job::Triggerer);
    match crate::events::delivery::Deliverer::new(state.webhooks) {
        Ok(deliverer) => registry.register(
            deliverer
                .with_metrics(state.metrics.clone())
                .with_store(state.health.clone()),
        ),
        Err(error) => {
            // Without an HTTP client deliveries wait (their jobs retry) until a process has one.
            tracing::error!(%error, "no HTTP client for webhook deliveries");
            registry
        }
    }
}

/// Starts the background job runner with claims leased for `lease`, after making sure the
/// standing jobs exist (event retention, finished work's retention); stop it with `shutdown` after the server stopped:
/// running jobs get `shutdown_grace` to finish, then are handed back.
pub async fn spawn_jobs(
    state: &AppState,
    lease: std::time::Duration,
    shutdown_grace: std::time::Duration,
) -> anyhow::Result<crate::jobs::RunnerHandle> {
    let prune = crate::events::retention::job(crate::store::metadata::now());
    crate::jobs::enqueue_now(&state.meta, &prune).await?;
    let finished = crate::jobs::prune::job(crate::store::metadata::now());
    crate::jobs::enqueue_now(&state.meta, &finished).await?;
    let config = crate::jobs::RunnerConfig {
        lease,
        heartbeat: lease / 3,
        shutdown_grace,
        ..crate::jobs::RunnerConfig::default()
    };
    Ok(crate::jobs::Runner::new(state.meta.clone(), job_registry(state), config).spawn())
}

/// The demo team's key: read from the data dir, or (first start) a new team `demo` and key,
/// saved readable only by the owner.
pub async fn demo_key(meta: &MetadataStore, data_dir: &Path) -> anyhow::Result<String> {
    let path = data_dir.join(DEMO_KEY_FILE);
    if let Ok(saved) = std::fs::read_to_string(&path) {
        let saved = saved.trim().to_owned();
        if meta.team_for_key(&saved).await?.is_some() {
            return Ok(saved);
        }
    }
    let (_, key) = meta.create_team("demo").await?;
    write_private(&path, &key.secret)?;
    Ok(key.secret)
}

/// The demo users seeded on the demo team's first start: (client user id, zone, persona,
/// providers). One wears a ring and a watch on the same nights, one a CGM, one travels.
const DEMO_USERS: [(&str, &str, &str, &[&str]); 3] = [
    (
        "demo-ring-and-watch",
        "Europe/London",
        "regular",
        &["oura", "apple_health_kit"],
    ),
    (
        "demo-cgm",
        "America/Denver",
        "athlete",
        &["freestyle_libre", "fitbit"],
    ),
    (
        "demo-traveller",
        "Europe/Berlin",
        "traveller",
        &["oura", "fitbit"],
    ),
];

/// Seeds the demo users when the demo team has none yet: each is created and connected to its
/// providers in demo mode (`sync::connectors::demo::connect`: the connection at once, `days` days of
/// history by the pull jobs; [`wait_for_history`] waits for them). Answers every user of the
/// team (client user id and id) for printing.
pub async fn seed_demo_users(
    state: &AppState,
    key: &str,
    days: u32,
) -> anyhow::Result<Vec<(String, uuid::Uuid)>> {
    use crate::sync::connectors::demo::generator::Persona;
    let team = state
        .meta
        .team_for_key(key)
        .await?
        .context("the demo key has no team")?;
    let (existing, _) = state.meta.list_users(team.id, 0, 100).await?;
    if existing.is_empty() {
        let now = chrono::Utc::now();
        for (client_user_id, zone, persona, providers) in DEMO_USERS {
            let new = crate::store::metadata::NewUser {
                client_user_id: client_user_id.to_owned(),
                fallback_time_zone: Some(zone.to_owned()),
                ..Default::default()
            };
            let user = state.meta.create_user(team.id, new).await?;
            let persona = Persona::from_name(persona).context("demo persona")?;
            for provider in providers {
                let link = crate::sync::connectors::demo::DemoLink {
                    provider,
                    persona,
                    days,
                };
                crate::sync::connectors::demo::connect(
                    &state.meta,
                    &state.health,
                    &user,
                    link,
                    now,
                )
                .await
                .with_context(|| format!("connecting {provider} for {client_user_id}"))?;
            }
        }
    }
    let (users, _) = state.meta.list_users(team.id, 0, 100).await?;
    Ok(users
        .into_iter()
        .map(|u| (u.client_user_id, u.id))
        .collect())
}

/// Waits, up to `timeout`, until the historical pulls of `users`' connections have completed
/// or failed (a failed one retries in the background); the job runner must be running. Answers
/// the pulls still under way when the wait ended: `serve --demo` waits for its demo users'
/// history before it announces itself, so a client that starts with it finds their data.
pub async fn wait_for_history(
    state: &AppState,
    users: &[uuid::Uuid],
    timeout: std::time::Duration,
) -> anyhow::Result<Vec<(uuid::Uuid, String)>> {
    use crate::store::metadata::sync_pulls;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut waiting = Vec::new();
    for user in users {
        for connection in state.meta.connections(*user).await? {
            waiting.push((*user, connection.provider));
        }
    }
    loop {
        let mut still = Vec::new();
        for (user, provider) in waiting {
            let mut conn = state.meta.reader().await?;
            let pending = sync_pulls::get(&mut conn, user, &provider)
                .await?
                .is_some_and(|s| s.completed_at.is_none() && s.failed.is_none());
            if pending {
                still.push((user, provider));
            }
        }
        waiting = still;
        if waiting.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(waiting);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()?;
    Ok(())
}

/// A future that resolves when the process receives SIGINT or SIGTERM. The handlers are
/// installed when this is called, not when the future is first polled: call it before the
/// server announces itself, so a signal sent right after `listening on` shuts down gracefully
/// instead of killing the process with the default action.
pub fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()> + Send + 'static>
{
    #[cfg(unix)]
    let (mut term, mut int) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
        )
    };
    Ok(async move {
        #[cfg(unix)]
        tokio::select! {
            _ = term.recv() => {},
            _ = int.recv() => {},
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down: finishing in-flight requests");
    })
}
