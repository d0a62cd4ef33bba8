//! reth's authenticated engine API (JWT, HS256), one call at a time. A fresh token per call: reth
//! refuses a token whose `iat` is more than 60 seconds away from its clock, and a generation or a
//! replay runs for much longer.

use alloy_rpc_types_engine::{Claims, JwtSecret};
use eyre::{Context, bail, eyre};
use serde_json::{Value, json};
use std::path::Path;

pub struct Engine {
    http: reqwest::Client,
    url: String,
    secret: JwtSecret,
}

impl Engine {
    /// `jwt`: the hex secret file the node was started with (`--authrpc.jwtsecret`).
    pub fn new(url: &str, jwt: &Path) -> eyre::Result<Self> {
        let hex = std::fs::read_to_string(jwt)
            .wrap_err_with(|| format!("reading the JWT secret {}", jwt.display()))?;
        let secret = JwtSecret::from_hex(hex.trim())
            .map_err(|e| eyre!("{} is not a JWT secret: {e}", jwt.display()))?;
        Ok(Self {
            http: reqwest::Client::new(),
            url: url.to_string(),
            secret,
        })
    }

    /// One call; a JSON-RPC error fails it, naming the method and the node's message.
    pub async fn call(&self, method: &str, params: Value) -> eyre::Result<Value> {
        let token = self
            .secret
            .encode(&Claims::with_current_timestamp())
            .map_err(|e| eyre!("signing a JWT: {e}"))?;
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response = self
            .http
            .post(&self.url)
            .bearer_auth(token)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&body).expect("JSON serializes"))
            .send()
            .await
            .wrap_err_with(|| format!("{method} on {}", self.url))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .wrap_err_with(|| format!("reading the answer to {method}"))?;
        let mut answer: Value = serde_json::from_slice(&bytes).wrap_err_with(|| {
            format!(
                "{method} on {} answered {status}: {}",
                self.url,
                String::from_utf8_lossy(&bytes)
            )
        })?;
        if let Some(error) = answer.get("error") {
            bail!("{method} on {}: {error}", self.url);
        }
        Ok(answer
            .get_mut("result")
            .map(Value::take)
            .unwrap_or(Value::Null))
    }
}
