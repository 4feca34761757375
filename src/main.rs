//! The `wearhouse` binary: parse the command line, set up logging (and `serve`'s trace export,
//! flushed when it stops), run.

use clap::Parser;
use wearhouse::config::{Cli, Command, DemoCommand, LabCommand, TeamCommand};

/// How long `serve --demo` waits for its demo users' history before it listens anyway.
const DEMO_HISTORY_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let otlp_endpoint = match &cli.command {
        Command::Serve(args) => args.otlp_endpoint.as_ref(),
        _ => None,
    };
    let telemetry = wearhouse::telemetry::init(otlp_endpoint)?;
    match cli.command {
        Command::Serve(args) => {
            let mut state = wearhouse::app::open_state(&args).await?;
            let mut demo_key = None;
            let mut demo_users = Vec::new();
            if args.demo {
                let key = wearhouse::app::demo_key(&state.meta, &args.store.data_dir).await?;
                println!("demo team API key: {key}");
                for (client_user_id, id) in
                    wearhouse::app::seed_demo_users(&state, &key, args.demo_days).await?
                {
                    println!("demo user {client_user_id}: {id}");
                    demo_users.push(id);
                }
                demo_key = Some(key);
            }
            let shutdown = wearhouse::app::shutdown_signal()?;
            let listener = tokio::net::TcpListener::bind(args.listen).await?;
            if args.public_url.is_none() {
                // The public URL defaults to the address actually bound (`--listen` may name
                // port 0), so OAuth callbacks and link pages point back here.
                state = state.with_public_url(&format!("http://{}", listener.local_addr()?));
            }
            let lease = std::time::Duration::from_secs(args.job_lease_secs);
            let grace = std::time::Duration::from_secs(args.shutdown_grace_secs);
            let jobs = wearhouse::app::spawn_jobs(&state, lease, grace).await?;
            // The demo users' history is pulled by the jobs just started: wait for it, so a
            // client starting with the server finds their data.
            let unfinished =
                wearhouse::app::wait_for_history(&state, &demo_users, DEMO_HISTORY_WAIT).await?;
            if !unfinished.is_empty() {
                tracing::warn!(
                    pulls = unfinished.len(),
                    "demo history still being pulled; it keeps arriving in the background"
                );
            }
            // Announced before `listening on`, the line that says the server is ready.
            let flight = match args.flight_listen {
                Some(addr) => {
                    let listener = tokio::net::TcpListener::bind(addr).await?;
                    println!("flight sql listening on {}", listener.local_addr()?);
                    let mut service = wearhouse::flight::FlightSql::new(
                        state.meta.clone(),
                        state.health.clone(),
                        state.engine.clone(),
                    );
                    if !args.workers.is_empty() {
                        let cluster = wearhouse::distributed::Cluster::new(
                            &args.workers,
                            args.distribute_above_mb.saturating_mul(1024 * 1024),
                            &wearhouse::config::worker_token()?,
                        )?;
                        service = service.with_cluster(cluster);
                    }
                    Some(tokio::spawn(wearhouse::flight::serve(listener, service)))
                }
                None => None,
            };
            println!("listening on http://{}", listener.local_addr()?);
            if let Some(key) = demo_key {
                let hint = wearhouse::app::webhook_hint(&listener.local_addr()?, &key, &args);
                println!("{hint}");
            }
            let served = wearhouse::http::serve(listener, state, shutdown, grace).await;
            if let Some(flight) = flight {
                flight.abort();
            }
            jobs.shutdown().await;
            // Last: the spans of the drained requests and released jobs are finished by now.
            tokio::task::spawn_blocking(move || telemetry.shutdown()).await?;
            served?;
        }
        Command::Worker(args) => {
            let token = wearhouse::config::worker_token()?;
            // No read cache: a worker has no shared versions to keep one exact, so every read
            // lists the bucket.
            let options = wearhouse::store::health::StoreOptions {
                cache_bytes: 0,
                ..Default::default()
            };
            let health =
                wearhouse::store::health::HealthStore::open(&args.object_store_url, options)?;
            let listener = tokio::net::TcpListener::bind(args.listen).await?;
            println!("worker listening on {}", listener.local_addr()?);
            let shutdown = wearhouse::app::shutdown_signal()?;
            wearhouse::distributed::worker::serve(
                listener,
                health,
                token,
                args.memory_mb.saturating_mul(1024 * 1024),
                shutdown,
            )
            .await?;
        }
        Command::Import {
            team,
            user,
            file,
            store,
        } => {
            let counts = wearhouse::cli::import(&store, &team, &user, &file).await?;
            println!("{}", serde_json::to_string_pretty(&counts)?);
        }
        Command::Demo {
            command:
                DemoCommand::Generate {
                    days,
                    out,
                    providers,
                    persona,
                    seed,
                    end,
                },
        } => {
            let persona =
                wearhouse::sync::connectors::demo::generator::Persona::from_name(&persona)
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "unknown persona {persona:?}: regular, traveller or athlete"
                        )
                    })?;
            let end = end.unwrap_or_else(|| chrono::Utc::now().date_naive());
            for (path, rows) in
                wearhouse::cli::demo_generate(&out, &providers, persona, seed, end, days)?
            {
                println!("{}\t{rows} rows", path.display());
            }
        }
        Command::Query {
            user,
            team,
            request,
            format,
            out,
            store,
        } => {
            let format = match format.as_str() {
                "json" => wearhouse::engine::OutputFormat::Json,
                "parquet" => wearhouse::engine::OutputFormat::ParquetTar,
                other => anyhow::bail!("unknown format {other:?}: json or parquet"),
            };
            let bytes =
                wearhouse::cli::run_query(&store, team.as_deref(), &user, &request, format).await?;
            match out {
                Some(path) => std::fs::write(&path, bytes)?,
                None if format == wearhouse::engine::OutputFormat::ParquetTar => {
                    anyhow::bail!("--format parquet writes binary: give --out FILE")
                }
                None => println!("{}", String::from_utf8_lossy(&bytes)),
            }
        }
        Command::Lab {
            command: LabCommand::ImportPscs { file, store },
        } => {
            let counts = wearhouse::cli::import_pscs(&store, &file).await?;
            for (lab, n) in counts {
                println!("{lab}\t{n} centres");
            }
        }
        Command::Cq { command } => {
            println!("{}", wearhouse::cli::cq(command).await?);
        }
        Command::Keys { command } => {
            println!("{}", wearhouse::cli::keys(command).await?);
        }
        Command::Team { command } => match command {
            TeamCommand::Create { name, store } => {
                let meta = wearhouse::app::open_metadata(&store).await?;
                let (team, key) = meta.create_team(&name).await?;
                println!("team_id: {}\napi_key: {}", team.id, key.secret);
            }
            TeamCommand::List { store } => {
                let meta = wearhouse::app::open_metadata(&store).await?;
                for team in meta.list_teams().await? {
                    println!(
                        "{}\t{}\t{}",
                        team.id,
                        team.name,
                        team.created_at.to_rfc3339()
                    );
                }
            }
        },
    }
    Ok(())
}
