//! The `wearhouse` binary: parse the command line, set up logging, run.

use clap::Parser;
use wearhouse::config::{Cli, Command, TeamCommand};

#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Serve(args) => {
            let state = wearhouse::app::open_state(&args).await?;
            if args.demo {
                let key = wearhouse::app::demo_key(&state.meta, &args.store.data_dir).await?;
                println!("demo team API key: {key}");
            }
            let compactor = std::sync::Arc::new(state.health.clone())
                .spawn_compactor(std::time::Duration::from_secs(30));
            let listener = tokio::net::TcpListener::bind(args.listen).await?;
            println!("listening on http://{}", listener.local_addr()?);
            wearhouse::http::serve(listener, state, wearhouse::app::shutdown_signal()).await?;
            compactor.abort();
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
