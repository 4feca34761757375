#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::link::email::EmailLinks;
use crate::link::oauth::{OAuthApp, OAuthApps};
use crate::link::password::PasswordLogins;
use crate::link::team_apps::Endpoints;
use crate::providers::provider;

fn app() -> OAuthApp {
    OAuthApp {
        client_id: "client".into(),
        client_secret: "secret".into(),
        authorize_url: "https://auth.example.com/authorize".into(),
        token_url: "https://auth.example.com/token".into(),
        redirect_uri: None,
        verification_token: None,
        subscription_id: None,
    }
}

/// A deployment with every sign-in this process has, the deployment applications of `apps`,
/// and no demo mode.
fn deployment(apps: &[&str]) -> LinkConfig {
    LinkConfig {
        oauth_apps: OAuthApps(apps.iter().map(|s| ((*s).to_owned(), app())).collect()),
        password: PasswordLogins::from_env().unwrap(),
        email: EmailLinks::from_env().unwrap(),
        ..LinkConfig::default()
    }
}

fn of(offer: &Offer<'_>, slug: &str) -> Connectability {
    offer.of(provider(slug).unwrap())
}

fn by_link(offer: &Offer<'_>) -> Vec<&'static str> {
    offer
        .catalogue()
        .into_iter()
        .filter(|(_, c)| c.by_link())
        .map(|(p, _)| p.slug)
        .collect()
}

#[test]
fn without_applications_only_working_password_sign_ins_with_a_connector_link() {
    let config = deployment(&[]);
    let offer = Offer::new(&config, []);
    assert_eq!(by_link(&offer), ["abbott_libreview", "peloton"]);
    use Blocker::*;
    use Connectability::Blocked;
    assert_eq!(of(&offer, "oura"), Blocked(NoOAuthApplication));
    assert_eq!(of(&offer, "wahoo"), Blocked(NoConnector));
    assert_eq!(of(&offer, "renpho"), Blocked(NoConnector));
    assert_eq!(of(&offer, "zwift"), Blocked(NoConnector));
    assert_eq!(of(&offer, "freestyle_libre"), Blocked(NoFollowerAccount));
    // On-device and pushed providers connect through the team's app, never by a link.
    for slug in ["apple_health_kit", "omron_ble", "manual"] {
        let c = of(&offer, slug);
        assert_eq!(c, Connectability::Connectable(Route::TeamApp), "{slug}");
        assert!(c.is_connectable() && !c.by_link(), "{slug}");
    }
}

#[test]
fn a_deployment_without_sign_in_implementations_offers_nothing() {
    let config = LinkConfig::default();
    let offer = Offer::new(&config, []);
    assert!(by_link(&offer).is_empty(), "{:?}", by_link(&offer));
    assert_eq!(
        of(&offer, "peloton"),
        Connectability::Blocked(Blocker::NoSignIn)
    );
    assert_eq!(
        of(&offer, "freestyle_libre"),
        Connectability::Blocked(Blocker::NoSignIn)
    );
}

#[test]
fn demo_mode_offers_the_demo_providers_without_applications() {
    let config = LinkConfig {
        demo: true,
        ..deployment(&[])
    };
    let offer = Offer::new(&config, []);
    assert_eq!(
        by_link(&offer),
        [
            "abbott_libreview",
            "fitbit",
            "freestyle_libre",
            "oura",
            "peloton"
        ]
    );
    assert_eq!(of(&offer, "oura"), Connectability::Connectable(Route::Demo));
    // Demo mode does not make a provider without a demo connectable.
    assert_eq!(
        of(&offer, "dexcom_v3"),
        Connectability::Blocked(Blocker::NoOAuthApplication)
    );
}

#[test]
fn an_application_of_the_deployment_or_the_team_makes_a_provider_with_a_connector_linkable() {
    let config = deployment(&["oura", "wahoo"]);
    let teams = [
        "dexcom_v3".to_owned(),
        "strava".to_owned(),
        "oura".to_owned(),
    ];
    let offer = Offer::new(&config, teams);
    use Connectability::{Blocked, Connectable};
    assert_eq!(of(&offer, "wahoo"), Blocked(Blocker::NoConnector));
    // Strava has a connector (`sync::connectors::strava`): the team's application links it.
    assert_eq!(of(&offer, "strava"), Connectable(Route::OAuth(Owner::Team)));
    // The team's own application wins over the deployment's.
    assert_eq!(of(&offer, "oura"), Connectable(Route::OAuth(Owner::Team)));
    assert_eq!(
        of(&offer, "dexcom_v3"),
        Connectable(Route::OAuth(Owner::Team))
    );
    let other_team = Offer::new(&config, []);
    assert_eq!(
        of(&other_team, "oura"),
        Connectable(Route::OAuth(Owner::Deployment))
    );
    assert_eq!(
        of(&other_team, "dexcom_v3"),
        Blocked(Blocker::NoOAuthApplication)
    );
}

#[test]
fn google_health_is_offered_once_an_application_is_configured() {
    use Connectability::{Blocked, Connectable};
    let none = deployment(&[]);
    let offer = Offer::new(&none, []);
    assert_eq!(
        of(&offer, "google_health"),
        Blocked(Blocker::NoOAuthApplication)
    );
    assert!(!by_link(&offer).contains(&"google_health"));
    let config = deployment(&["google_health"]);
    let offer = Offer::new(&config, []);
    assert_eq!(
        of(&offer, "google_health"),
        Connectable(Route::OAuth(Owner::Deployment))
    );
    assert!(by_link(&offer).contains(&"google_health"));
    // A team's own Google client alone, on Google's own endpoints.
    let team = Offer::new(&none, ["google_health".to_owned()]);
    assert_eq!(
        of(&team, "google_health"),
        Connectable(Route::OAuth(Owner::Team))
    );
}

#[test]
fn a_team_application_needs_endpoints_from_the_deployment_or_the_provider() {
    let config = LinkConfig {
        oauth_endpoints: Endpoints::none(),
        ..deployment(&["oura"])
    };
    let offer = Offer::new(&config, ["dexcom_v3".to_owned(), "oura".to_owned()]);
    assert_eq!(
        of(&offer, "dexcom_v3"),
        Connectability::Blocked(Blocker::NoOAuthApplication)
    );
    assert_eq!(
        of(&offer, "oura"),
        Connectability::Connectable(Route::OAuth(Owner::Team))
    );
}

#[test]
fn the_e_mail_provider_needs_a_follower_account_of_the_deployment_or_the_team() {
    let config = deployment(&[]);
    let team = Offer::new(&config, ["freestyle_libre".to_owned()]);
    assert_eq!(
        of(&team, "freestyle_libre"),
        Connectability::Connectable(Route::Email(Owner::Team))
    );
    let config = deployment(&["freestyle_libre"]);
    let offer = Offer::new(&config, []);
    assert_eq!(
        of(&offer, "freestyle_libre"),
        Connectability::Connectable(Route::Email(Owner::Deployment))
    );
}

#[test]
fn auth_types_are_the_reference_s() {
    let auth = |slug: &str| provider(slug).unwrap().auth_type;
    assert_eq!(auth("freestyle_libre"), AuthType::Email);
    assert_eq!(auth("abbott_libreview"), AuthType::Password);
    assert_eq!(auth("renpho"), AuthType::Password);
}

#[test]
fn a_token_for_a_provider_that_cannot_connect_is_refused_with_the_provider_and_why() {
    let config = deployment(&[]);
    let offer = Offer::new(&config, []);
    let refused = |slug: &str| match offer.link_route(provider(slug).unwrap()) {
        Err(LinkError::NotConnectable(sentence)) => sentence,
        other => panic!("{slug}: {other:?}"),
    };
    let oura = refused("oura");
    assert!(oura.contains("Oura (oura)") && oura.contains("no OAuth application"));
    assert!(
        oura.contains("PUT /v2/team/provider/oura/credentials"),
        "{oura}"
    );
    assert!(refused("wahoo").contains("no connector"));
    assert!(refused("manual").contains("not through a link"));
    let peloton = offer.link_route(provider("peloton").unwrap());
    assert!(matches!(peloton, Ok(Route::Password)), "{peloton:?}");

    // A token's options: every provider named that cannot connect is in the one refusal.
    let options = crate::link::tokens::LinkOptions {
        filter_on_providers: Some(vec!["peloton".into(), "wahoo".into(), "oura".into()]),
        ..Default::default()
    };
    match offer.check_options(&options) {
        Err(LinkError::NotConnectable(sentence)) => {
            assert!(sentence.contains("Wahoo (wahoo)"), "{sentence}");
            assert!(sentence.contains("Oura (oura)"), "{sentence}");
            assert!(!sentence.contains("Peloton"), "{sentence}");
        }
        other => panic!("{other:?}"),
    }
    let fine = crate::link::tokens::LinkOptions {
        provider: Some("abbott_libreview".into()),
        ..Default::default()
    };
    assert!(offer.check_options(&fine).is_ok());
    assert!(offer.check_options(&Default::default()).is_ok());
}

#[test]
fn only_the_token_s_providers_are_offered() {
    let config = deployment(&["oura"]);
    let offer = Offer::new(&config, []);
    let session = |options: crate::link::tokens::LinkOptions| LinkSession {
        token_hash: String::new(),
        team_id: Uuid::nil(),
        user_id: Uuid::nil(),
        options,
        expires_at: chrono::Utc::now(),
    };
    let slugs = |s: &LinkSession| offer.offered(s).iter().map(|p| p.slug).collect::<Vec<_>>();
    let everything = session(Default::default());
    assert_eq!(slugs(&everything), ["abbott_libreview", "oura", "peloton"]);
    let filtered = session(crate::link::tokens::LinkOptions {
        filter_on_providers: Some(vec!["oura".into(), "wahoo".into()]),
        ..Default::default()
    });
    assert_eq!(slugs(&filtered), ["oura"]);
}
