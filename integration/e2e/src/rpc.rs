//! JSON-RPC over HTTP (jsonrpsee), with batches so thousands of lookups take a few round trips.

use eyre::{Context, eyre};
use jsonrpsee::{
    core::{
        client::{BatchResponse, ClientT},
        params::BatchRequestBuilder,
    },
    http_client::{HttpClient, HttpClientBuilder},
};
use serde_json::Value;
use std::time::Duration;

/// Requests per batch: well under reth's default limits on request size and batch length.
pub const BATCH: usize = 100;

pub struct Rpc {
    client: HttpClient,
    url: String,
}

impl Rpc {
    pub fn new(url: &str) -> eyre::Result<Self> {
        let client = HttpClientBuilder::default()
            .request_timeout(Duration::from_secs(120))
            .max_request_size(64 << 20)
            .max_response_size(256 << 20)
            .build(url)
            .wrap_err_with(|| format!("RPC client for {url}"))?;
        Ok(Self {
            client,
            url: url.to_string(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// One call; the error names the node and the method.
    pub async fn call(&self, method: &str, params: Vec<Value>) -> eyre::Result<Value> {
        let mut p = jsonrpsee::core::params::ArrayParams::new();
        for v in params {
            p.insert(v).expect("a JSON value serializes");
        }
        self.client
            .request(method, p)
            .await
            .wrap_err_with(|| format!("{method} on {}", self.url))
    }

    /// Many calls of one method, in batches; the answers in order, each its own result (an error
    /// object from the node is an `Err` of that entry, a transport failure fails the whole).
    pub async fn batch(
        &self,
        method: &str,
        calls: impl IntoIterator<Item = Vec<Value>>,
    ) -> eyre::Result<Vec<Result<Value, String>>> {
        let calls: Vec<Vec<Value>> = calls.into_iter().collect();
        let mut out = Vec::with_capacity(calls.len());
        for chunk in calls.chunks(BATCH) {
            let mut batch = BatchRequestBuilder::new();
            for params in chunk {
                let mut p = jsonrpsee::core::params::ArrayParams::new();
                for v in params {
                    p.insert(v).expect("a JSON value serializes");
                }
                batch.insert(method, p).expect("params serialize");
            }
            let response: BatchResponse<'_, Value> =
                self.client.batch_request(batch).await.wrap_err_with(|| {
                    format!("a batch of {} {method} on {}", chunk.len(), self.url)
                })?;
            out.extend(
                response
                    .into_iter()
                    .map(|r| r.map_err(|e| format!("{} ({})", e.message(), e.code()))),
            );
        }
        Ok(out)
    }

    /// Like [`Rpc::batch`], but any error entry fails the whole, naming it.
    pub async fn batch_ok(
        &self,
        method: &str,
        calls: impl IntoIterator<Item = Vec<Value>>,
    ) -> eyre::Result<Vec<Value>> {
        self.batch(method, calls)
            .await?
            .into_iter()
            .map(|r| r.map_err(|e| eyre!("{method} on {}: {e}", self.url)))
            .collect()
    }

    pub async fn block_number(&self) -> eyre::Result<u64> {
        quantity(&self.call("eth_blockNumber", vec![]).await?)
    }
}

/// A hex quantity ("0x1a") as u64.
pub fn quantity(v: &Value) -> eyre::Result<u64> {
    let s = v.as_str().ok_or_else(|| eyre!("not a hex quantity: {v}"))?;
    u64::from_str_radix(s.trim_start_matches("0x"), 16).wrap_err_with(|| format!("quantity {s}"))
}

/// A block number as a hex quantity.
pub fn hex(n: u64) -> Value {
    Value::String(format!("{n:#x}"))
}
