//! Which role and which names each request needs: decided here once, for the router's auth
//! layer (`crate::http::auth`), the fast path's (`crate::fast`), gRPC's `IdService` and
//! RESP's commands.
//!
//! Open without a token: `/healthz` and `/readyz` (for load balancers and orchestrators),
//! `/metrics` (for scrapers: names and numbers, no hosts or addresses), `/openapi.json`, and
//! `/ui` with its assets (the page holds no data; it asks for a token to read
//! `/v1/generators`). `/v1/generators` lists every generator with its worker lease, holder
//! and registry, so it needs `read` on every name (`*`), as listing tags does.
//! Tinyid's routes (`/tinyid/id/...`) pass the layers: their handler judges the token itself
//! (`crate::answer::tinyid`), with this table's [`ISSUE`] role on the `bizType` it names,
//! because the token comes as a parameter and a refusal is Tinyid's HTTP 200 with code 5.
//! A route this table does not know needs an admin token for every name, so a new route is
//! closed until someone decides otherwise.

use std::borrow::Cow;

use snowdrift_proto::http::Route;

use crate::auth::{Role, Target};
use crate::state::AppState;

/// The role that issuing or decoding the IDs of one named generator or tag needs, on every
/// transport: `/v1/ids/{name}`, its decode and Leaf's single-ID routes over HTTP, gRPC's
/// `IdService` calls, RESP's `INCR`, `INCRBY` and `SNOWFLAKE`.
pub(crate) const ISSUE: Role = Role::Read;

/// The names a route's request touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum On {
    /// The name in this path parameter.
    Param(&'static str),
    /// The snowflake generator the Leaf route picks with this parameter.
    Snowflake(&'static str),
    /// Every name.
    All,
}

/// What a request needs: `role` on the names it touches (`on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Need {
    /// The role.
    pub(crate) role: Role,
    /// The names.
    pub(crate) on: On,
}

/// What `route` needs: nothing (`None`: open), or a role on some names.
pub(crate) fn need(route: Route) -> Option<Need> {
    let (role, on) = match route {
        Route::Healthz
        | Route::Readyz
        | Route::Metrics
        | Route::OpenApi
        | Route::Ui
        | Route::UiScript
        | Route::UiStyle => return None,
        // Judged by the handler: see the module's documentation.
        Route::TinyidNextId
        | Route::TinyidNextIdSimple
        | Route::TinyidNextSegmentId
        | Route::TinyidNextSegmentIdSimple => return None,
        Route::Ids | Route::Decode => (ISSUE, On::Param("name")),
        Route::LeafSegment => (ISSUE, On::Param("tag")),
        Route::LeafSnowflake => (ISSUE, On::Snowflake("key")),
        Route::LeafDecode | Route::LeafDecodeQuery => (ISSUE, On::Snowflake("")),
        // Every tag's buffer, as /v1/generators shows it.
        Route::LeafCache => (Role::Read, On::All),
        // The tag table, as listing /v1/tags.
        Route::LeafDb => (Role::Admin, On::All),
        Route::Tag => (Role::Admin, On::Param("tag")),
        Route::Generators => (Role::Read, On::All),
        // Listing and creating tags.
        Route::Tags => (Role::Admin, On::All),
    };
    Some(Need { role, on })
}

/// What the route with `template` (its pattern, as the router matched it) needs. A route the
/// table does not know needs an admin token for every name, so a new route is closed until
/// someone decides otherwise.
pub(crate) fn need_of(template: &str) -> Option<Need> {
    match Route::from_pattern(template) {
        Some(route) => need(route),
        None => Some(Need {
            role: Role::Admin,
            on: On::All,
        }),
    }
}

/// The names a request touches, owned where they had to be worked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Touched<'a> {
    /// One generator or tag.
    Name(Cow<'a, str>),
    /// Every name.
    All,
    /// No particular name: any token with the role will do.
    Any,
}

impl Touched<'_> {
    /// As the tokens judge it.
    pub(crate) fn target(&self) -> Target<'_> {
        match self {
            Touched::Name(name) => Target::Name(name),
            Touched::All => Target::All,
            Touched::Any => Target::Any,
        }
    }
}

impl Need {
    /// The names a request with this need touches. `params` gives the value of a path
    /// parameter by its key (`None` for a parameter the request lacks or that is not
    /// UTF-8); `params` itself is `None` when the request's parameters could not be read,
    /// and then every name is touched: closed, not open.
    pub(crate) fn touches<'a>(
        self,
        state: &AppState,
        params: Option<impl Fn(&str) -> Option<&'a str>>,
    ) -> Touched<'a> {
        let Some(param) = params else {
            return Touched::All;
        };
        match self.on {
            On::All => Touched::All,
            // A parameter that is not UTF-8 names nothing: the token is still checked for
            // the role, and the handler refuses the request with a 400.
            On::Param(key) => param(key).map_or(Touched::Any, |name| Touched::Name(name.into())),
            // Also a Leaf snowflake route on a server without snowflake generators: the
            // handler answers 404 to any valid token.
            On::Snowflake(key) => {
                super::leaf::snowflake_name(state, param(key).unwrap_or_default())
                    .map_or(Touched::Any, |name| Touched::Name(name.into()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need_parts(template: &str) -> Option<(Role, On)> {
        need_of(template).map(|n| (n.role, n.on))
    }

    #[test]
    fn open_routes_stay_open_and_unknown_ones_are_closed() {
        for open in [
            "/healthz",
            "/readyz",
            "/metrics",
            "/openapi.json",
            "/ui",
            "/ui/app.js",
        ] {
            assert_eq!(need_parts(open), None, "{open}");
        }
        let read_name = Some((Role::Read, On::Param("name")));
        assert_eq!(need_parts("/v1/ids/{name}"), read_name);
        assert_eq!(need_parts("/v1/ids/{name}/decode/{id}"), read_name);
        assert_eq!(
            need_parts("/api/segment/get/{tag}"),
            Some((Role::Read, On::Param("tag")))
        );
        assert_eq!(
            need_parts("/api/snowflake/get/{key}"),
            Some((Role::Read, On::Snowflake("key")))
        );
        assert_eq!(
            need_parts("/v1/tags/{tag}"),
            Some((Role::Admin, On::Param("tag")))
        );
        assert_eq!(need_parts("/v1/generators"), Some((Role::Read, On::All)));
        let admin_all = Some((Role::Admin, On::All));
        assert_eq!(need_parts("/v1/tags"), admin_all);
        assert_eq!(need_parts("/v1/something/new"), admin_all);
        assert_eq!(need_parts("/uix"), admin_all);
    }

    /// The fast path reads one parameter, the rest of the path after the route's fast
    /// prefix, and hands it to [`Need::touches`] as whatever parameter the need names. That
    /// is the router's reading only while every fast route needs a role on exactly that
    /// parameter, the one its pattern ends with; a fast route that needed nothing, every
    /// name, or another parameter would be judged differently on the two paths.
    #[test]
    fn a_fast_route_needs_its_last_parameter_as_the_router_reads_it() {
        let fast: Vec<Route> = Route::ALL
            .into_iter()
            .filter(|r| r.fast_prefix().is_some())
            .collect();
        assert_eq!(
            fast,
            [Route::Ids, Route::LeafSegment, Route::LeafSnowflake],
            "a new fast route: check what it needs"
        );
        for route in fast {
            let pattern = route.pattern();
            let prefix = route.fast_prefix().unwrap_or_default();
            let last = pattern
                .strip_prefix(prefix)
                .and_then(|p| p.strip_prefix('{'))
                .and_then(|p| p.strip_suffix('}'))
                .unwrap_or_else(|| panic!("{pattern}: one parameter after {prefix}"));
            let need = need(route).unwrap_or_else(|| panic!("{pattern} is open"));
            assert_eq!(need.role, ISSUE, "{pattern}");
            match need.on {
                On::Param(key) | On::Snowflake(key) => assert_eq!(key, last, "{pattern}"),
                On::All => panic!("{pattern} touches every name"),
            }
        }
    }

    /// openapi.json marks exactly the operations this table guards, so the document never
    /// shows a closed route as open or the other way round.
    #[test]
    fn openapi_security_matches_the_table() {
        let spec: serde_json::Value =
            serde_json::from_str(include_str!("../../openapi.json")).expect("openapi.json");
        let paths = spec["paths"].as_object().expect("paths");
        assert!(paths.len() >= 10, "{}", paths.len());
        for (path, item) in paths {
            for (method, op) in item.as_object().expect("path item") {
                let Some(op) = op.as_object() else { continue };
                let documented = op.contains_key("security");
                assert_eq!(
                    documented,
                    need_of(path).is_some(),
                    "{method} {path}: openapi.json security and answer::access::need disagree"
                );
            }
        }
    }
}
