//! Everything a handler needs, built once per process and shared by every
//! invocation (clients are never built per request).

use crate::error::InitError;
use store::deployment::{FunctionId, TableId};
use std::sync::Arc;
use store::oauth::OAuthStore;
use store::{ApiKeys, AwsClients, Config};
use tokio::sync::OnceCell;

#[derive(Clone, Debug)]
pub struct App {
    pub config: Config,
    pub clients: AwsClients,
    /// `None` in a function that has no API keys table (SQS consumers).
    pub api_keys: Option<ApiKeys>,
    /// OAuth clients, codes and tokens (the `oauth` and `mcp` functions).
    pub oauth: Option<OAuthStore>,
    /// The agent runtime, built on first use and then shared (tests may set
    /// it first, e.g. with extra tools).
    pub agent: Arc<OnceCell<Arc<agent::Runtime>>>,
    /// The domain layer, built on first use and then shared.
    pub instance: Arc<OnceCell<Arc<instance::Instance>>>,
}

impl App {
    /// Lambda init: logging, configuration (failing with the name of any
    /// missing or malformed variable this function needs), AWS clients.
    pub async fn init(function: FunctionId) -> Result<App, InitError> {
        let config = Config::from_env()?;
        crate::logging::init(config.log_json);
        config.require(function.def())?;
        if function.def().tables.iter().any(|t| t.table == TableId::OAuth) {
            crate::oauth::Settings::from_config(&config)?;
        }
        let clients = AwsClients::new(&config).await;
        tracing::info!(function = ?function, "initialised");
        Ok(App::new(config, clients))
    }

    /// An app over an existing configuration (the local cloud, tests).
    pub fn new(config: Config, clients: AwsClients) -> App {
        let api_keys = config.table(TableId::ApiKeys).ok().map(|t| ApiKeys::new(clients.dynamo.clone(), t));
        let oauth = config.table(TableId::OAuth).ok().map(|t| OAuthStore::new(clients.dynamo.clone(), t));
        App { config, clients, api_keys, oauth, agent: Arc::new(OnceCell::new()), instance: Arc::new(OnceCell::new()) }
    }

    /// The agent runtime of this process.
    pub async fn agent(&self) -> Result<Arc<agent::Runtime>, crate::ApiError> {
        let rt = self
            .agent
            .get_or_try_init(|| async {
                agent::Runtime::from_config(&self.config, &self.clients).await.map(Arc::new)
            })
            .await?;
        Ok(rt.clone())
    }

    /// The domain layer of this process (the agent runtime's, when it has one).
    pub async fn instance(&self) -> Result<Arc<instance::Instance>, crate::ApiError> {
        let inst = self
            .instance
            .get_or_try_init(|| async {
                match self.agent.get().and_then(|rt| rt.instance.clone()) {
                    Some(i) => Ok(i),
                    None => instance::Instance::new(&self.clients, &self.config).await.map(Arc::new),
                }
            })
            .await?;
        Ok(inst.clone())
    }
}
