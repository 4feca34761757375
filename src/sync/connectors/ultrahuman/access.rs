//! How wearhouse is let into a user's Ultrahuman data: OAuth 2.0, authorisation code grant.
//!
//! The decision and its sources. Ultrahuman documents two ways in:
//! - a **personal API token** (`vision.ultrahuman.com/developer-docs`, and the older
//!   `ultrahumanapp.notion.site/API-Documentation-5f32ec15ef6b4fa5bc8249f7b875d212` and
//!   `blog.ultrahuman.com/blog/accessing-the-ultrahuman-partnership-api/` of June 2024): a
//!   partner's own key in `Authorization`, with the user named by `email` after the user typed
//!   the partner's "data sharing code" into the Ultrahuman app;
//! - an **OAuth 2.0 provider** (`vision.ultrahuman.com/developer-docs?type=oauth`, the notion
//!   page `Ultrahuman-Third-party-app-partners-API-documentation-129755317a91806a9bc5efae313673f5`,
//!   and the same blog post as revised in September 2025): the authorisation code grant and the
//!   refresh token grant, an authorisation endpoint (`GET /authorize`: `response_type=code`,
//!   `client_id`, `redirect_uri`, `scope` space-separated, `state`) and a token endpoint
//!   (`POST /api/partners/oauth/token`: `grant_type`, `client_id`, `client_secret`, and `code`
//!   with `redirect_uri`, or `refresh_token`), whose access tokens live about a week and are
//!   sent as `Authorization: Bearer <token>`; scopes `profile`, `ring_data`, `cgm_data`.
//!
//! The connector links by OAuth: the documentation gives both endpoints, a user grants access on
//! Ultrahuman's own page (no codes typed into an app, no e-mail addresses traded), and it is
//! the flow the link page already runs for every other OAuth provider. Client credentials come
//! from Ultrahuman's partner onboarding (its developer dashboard), not self-service, which is why
//! the catalogue lists the provider as `team_oauth`: a team brings its own application
//! (`PUT /v2/team/provider/ultrahuman/credentials`), or the deployment configures one
//! (`--oauth-apps`).
//!
//! Where the documentation is silent, and what was read instead:
//! - The authorisation page's host: the documentation names only the path. Public integrations
//!   send users to `https://auth.ultrahuman.com/authorise` (British spelling; e.g.
//!   `the-momentum/open-wearables`, `backend/app/services/providers/ultrahuman/oauth.py`), and
//!   so does [`OAUTH_AUTHORIZE_URL`]. Both URLs are overridable (`--oauth-apps`, or a team's
//!   application on the deployment's endpoints).
//! - The token endpoint wants the client's id and secret in the form (the documentation lists
//!   them as parameters; `sync::token_wire::client_in_body`), not HTTP Basic. Each refresh
//!   answers a new refresh token (integrators report that the old one stops working), which
//!   the refresh stores like any other.
//! - No PKCE is documented; the link sends its challenge anyway (RFC 7636 servers that do not
//!   know it ignore it).

/// Ultrahuman's OAuth authorisation page.
pub const OAUTH_AUTHORIZE_URL: &str = "https://auth.ultrahuman.com/authorise";

/// Ultrahuman's OAuth token endpoint.
pub const OAUTH_TOKEN_URL: &str = "https://partner.ultrahuman.com/api/partners/oauth/token";
