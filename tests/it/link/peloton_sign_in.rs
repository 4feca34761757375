//! Peloton's sign-in (`link::password::peloton`) against [`FakePeloton`]'s Auth0 tenant, outside
//! the link API: each answer of the PKCE sign-in and of the refresh grant as the outcome the
//! link and the pulls act on (accepted with both tokens, the credential error, a refused
//! refresh token, an outage), and that no outcome shows the password.

#![allow(clippy::unwrap_used)]

use wearhouse::link::LinkErrorType;
use wearhouse::link::password::peloton::Peloton;
use wearhouse::link::password::{Login, PasswordLogin, Renewal, SignIn};
use wearhouse::sync::Connector;

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
    let connector = wearhouse::sync::peloton::Peloton::new(&fake.base).unwrap();
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
    let closed =
        wearhouse::link::password::peloton::Peloton::new(&fake.base, "http://127.0.0.1:9").unwrap();
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
