//! Peloton's sign-in (`sync::connectors::peloton::access`) against [`FakePeloton`]'s Auth0 tenant, outside
//! the link API: each answer of the PKCE sign-in and of the refresh grant as the outcome the
//! link and the pulls act on (accepted with both tokens, the credential error, a refused
//! refresh token, an outage), and that no outcome shows the password.

#![allow(clippy::unwrap_used)]

use wearhouse::link::LinkErrorType;
use wearhouse::link::password::{Login, PasswordLogin, Renewal, SignIn};
use wearhouse::sync::Connector;
use wearhouse::sync::connectors::peloton::access::Peloton;

use super::fake_peloton::{ACCESS_TOKEN, FakePeloton, PASSWORD, REFRESH_TOKEN, USER_ID, USERNAME};

/// Peloton's sign-in at `fake` (both hosts).
fn sign_in_at(fake: &FakePeloton) -> Peloton {
    Peloton::new(&fake.base, &fake.base).unwrap()
}

fn login(password: &str) -> Login<'_> {
    Login {
        username: USERNAME,
        password,
        region: None,
    }
}

#[tokio::test]
async fn the_sign_in_and_the_refresh_answer_each_outcome() {
    let fake = FakePeloton::start().await;
    let peloton = sign_in_at(&fake);
    let SignIn::Accepted {
        provider_user_id,
        session,
        refresh_token,
    } = peloton.sign_in(login(PASSWORD)).await
    else {
        panic!("not signed in");
    };
    assert_eq!(provider_user_id, USER_ID);
    assert_eq!(session, ACCESS_TOKEN);
    assert_eq!(refresh_token.as_deref(), Some(REFRESH_TOKEN));
    assert_eq!((fake.attempts(), fake.logins()), (1, 1));

    // A wrong password: the credential error, and no code was given.
    let refused = peloton.sign_in(login("not-it")).await;
    assert!(
        matches!(
            refused,
            SignIn::Refused(LinkErrorType::ProviderCredentialError, _)
        ),
        "{refused:?}"
    );
    assert_eq!((fake.attempts(), fake.logins()), (2, 1));

    // The refresh token gives a new access token, which the API takes.
    let Renewal::Renewed {
        session,
        refresh_token,
    } = peloton.refresh(REFRESH_TOKEN).await
    else {
        panic!("not renewed");
    };
    assert_ne!(session, ACCESS_TOKEN);
    assert_eq!(refresh_token, None, "not rotated");
    let connector = wearhouse::sync::connectors::peloton::Peloton::new(&fake.base).unwrap();
    assert_eq!(
        connector.account(&session).await.unwrap().as_deref(),
        Some(USER_ID)
    );
    assert_eq!(peloton.refresh("rt-unknown").await, Renewal::Refused);
    fake.revoke_refresh_tokens();
    assert_eq!(peloton.refresh(REFRESH_TOKEN).await, Renewal::Refused);
    assert_eq!(fake.refreshes(), (3, 1));

    // Auth0 down: an API error for the sign-in, a failure to retry for the refresh; a
    // closed auth host the same.
    fake.sign_in_down(true);
    let down = peloton.sign_in(login(PASSWORD)).await;
    assert!(
        matches!(down, SignIn::Refused(LinkErrorType::ProviderApiError, _)),
        "{down:?}"
    );
    assert!(matches!(
        peloton.refresh(REFRESH_TOKEN).await,
        Renewal::Failed(_)
    ));
    let closed = wearhouse::sync::connectors::peloton::access::Peloton::new(
        &fake.base,
        "http://127.0.0.1:9",
    )
    .unwrap();
    let unreachable = closed.sign_in(login(PASSWORD)).await;
    assert!(
        matches!(
            unreachable,
            SignIn::Refused(LinkErrorType::ProviderApiError, _)
        ),
        "{unreachable:?}"
    );
    assert!(!format!("{unreachable:?}").contains(PASSWORD));
}

/// The fake's own checks, walked by hand: a code is exchanged only with the verifier whose
/// S256 is the challenge sent to `/authorize`, and only once. (The happy path above thus proves
/// the client's verifier matches its challenge.)
#[tokio::test]
async fn the_fake_exchanges_a_code_only_for_its_verifier() {
    use base64::Engine;
    use sha2::{Digest, Sha256};

    use super::fake_peloton::auth0::{AUDIENCE, CALLBACK, WEB_CLIENT_ID};

    let fake = FakePeloton::start().await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let verifier = "a-verifier-of-enough-length-0123456789-abcdefghijkl";
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    let mut cookies: Vec<String> = Vec::new();
    fn keep(cookies: &mut Vec<String>, r: &reqwest::Response) {
        for c in r.headers().get_all("set-cookie") {
            let pair = c.to_str().unwrap().split(';').next().unwrap().to_owned();
            cookies.push(pair);
        }
    }
    let location = |r: &reqwest::Response| {
        let l = r.headers()["location"].to_str().unwrap();
        url::Url::parse(&fake.base).unwrap().join(l).unwrap()
    };

    let r = http
        .get(format!("{}/authorize", fake.base))
        .query(&[
            ("client_id", WEB_CLIENT_ID),
            ("audience", AUDIENCE),
            ("scope", "offline_access openid peloton-api.members:default"),
            ("response_type", "code"),
            ("redirect_uri", CALLBACK),
            ("state", "client-state"),
            ("nonce", "n"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 302);
    let page = location(&r);
    let tx = page
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let r = http.get(page).send().await.unwrap();
    keep(&mut cookies, &r);
    let csrf = cookies
        .iter()
        .find_map(|c| c.strip_prefix("_csrf="))
        .unwrap()
        .to_owned();
    let body = serde_json::json!({"client_id": WEB_CLIENT_ID, "tenant": "peloton-prod",
        "connection": "pelo-user-password", "redirect_uri": CALLBACK, "code_challenge": challenge,
        "state": tx, "_csrf": csrf, "username": USERNAME, "password": PASSWORD});
    let r = http
        .post(format!("{}/usernamepassword/login", fake.base))
        .header("cookie", cookies.join("; "))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let html = r.text().await.unwrap();
    let value = |name: &str| {
        let at = html.find(&format!("name=\"{name}\" value=\"")).unwrap() + name.len() + 15;
        let raw = &html[at..at + html[at..].find('"').unwrap()];
        raw.replace("&#34;", "\"").replace("&amp;", "&")
    };
    let form = [
        ("wa", value("wa")),
        ("wresult", value("wresult")),
        ("wctx", value("wctx")),
    ];
    let r = http
        .post(format!("{}/login/callback", fake.base))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 302);
    keep(&mut cookies, &r);
    let r = http
        .get(location(&r))
        .header("cookie", cookies.join("; "))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 302);
    let back = location(&r);
    assert!(back.as_str().starts_with(CALLBACK), "{back}");
    let pairs: std::collections::HashMap<_, _> = back.query_pairs().into_owned().collect();
    assert_eq!(pairs["state"], "client-state");

    let exchange = |verifier: &str| {
        http.post(format!("{}/oauth/token", fake.base))
            .json(&serde_json::json!({"grant_type": "authorization_code",
                "client_id": WEB_CLIENT_ID, "code": pairs["code"], "redirect_uri": CALLBACK,
                "code_verifier": verifier}))
            .send()
    };
    // A wrong verifier is refused and uses the code up: the right one then finds no code.
    let wrong = exchange("another-verifier-entirely-0123456789-abcdefghijklm")
        .await
        .unwrap();
    assert_eq!(wrong.status(), 403);
    let refusal: serde_json::Value = wrong.json().await.unwrap();
    assert_eq!(refusal["error"], "invalid_grant");
    assert_eq!(
        refusal["error_description"],
        "Failed to verify code verifier"
    );
    assert_eq!(exchange(verifier).await.unwrap().status(), 403);
    assert_eq!(fake.logins(), 0);
}
