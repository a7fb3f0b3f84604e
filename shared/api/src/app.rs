//! Everything a handler needs, built once per process and shared by every
//! invocation (clients are never built per request).

use crate::error::InitError;
use store::deployment::{FunctionId, TableId};
#[cfg(feature = "instance")]
use std::sync::Arc;
use store::oauth::OAuthStore;
use store::{ApiKeys, AwsClients, Config};
#[cfg(feature = "instance")]
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
    #[cfg(feature = "agent")]
    pub agent: Arc<OnceCell<Arc<agent::Runtime>>>,
    /// How [`App::agent`] builds it.
    #[cfg(feature = "agent")]
    agent_builder: AgentBuilder,
    /// The domain layer, built on first use and then shared.
    #[cfg(feature = "instance")]
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
        let clients = AwsClients::new(&config);
        tracing::info!(function = ?function, "initialised");
        Ok(App::assemble(config, clients))
    }

    /// An app over an existing configuration (the local cloud, tests): every
    /// handler, so the whole agent where it is compiled in.
    pub fn new(config: Config, clients: AwsClients) -> App {
        let app = App::assemble(config, clients);
        #[cfg(feature = "step")]
        let app = app.with_agent(whole_agent);
        app
    }

    /// The agent runtime [`App::agent`] builds: a function's `main.rs` names
    /// [`whole_agent`] where steps run; the default is [`run_control`].
    #[cfg(feature = "agent")]
    pub fn with_agent(mut self, builder: AgentBuilder) -> App {
        self.agent_builder = builder;
        self
    }

    fn assemble(config: Config, clients: AwsClients) -> App {
        let api_keys = config.table(TableId::ApiKeys).ok().map(|t| ApiKeys::new(clients.dynamo.clone(), t));
        let oauth = config.table(TableId::OAuth).ok().map(|t| OAuthStore::new(clients.dynamo.clone(), t));
        App {
            config,
            clients,
            api_keys,
            oauth,
            #[cfg(feature = "agent")]
            agent: Arc::new(OnceCell::new()),
            #[cfg(feature = "agent")]
            agent_builder: run_control,
            #[cfg(feature = "instance")]
            instance: Arc::new(OnceCell::new()),
        }
    }

    /// The agent runtime of this process, built on first use.
    #[cfg(feature = "agent")]
    pub async fn agent(&self) -> Result<Arc<agent::Runtime>, crate::ApiError> {
        let rt = self
            .agent
            .get_or_try_init(|| async { (self.agent_builder)(&self.config, &self.clients).await.map(Arc::new) })
            .await?;
        Ok(rt.clone())
    }

    /// The domain layer of this process (the agent runtime's, when it has one).
    #[cfg(feature = "instance")]
    pub async fn instance(&self) -> Result<Arc<instance::Instance>, crate::ApiError> {
        let inst = self
            .instance
            .get_or_try_init(|| async {
                #[cfg(feature = "agent")]
                if let Some(i) = self.agent.get().and_then(|rt| rt.instance.clone()) {
                    return Ok(i);
                }
                instance::Instance::new(&self.clients, &self.config).await.map(Arc::new)
            })
            .await?;
        Ok(inst.clone())
    }
}

/// Builds a process's agent runtime. What a function names is what its
/// binary links (the linker drops the other): [`run_control`] or
/// [`whole_agent`].
#[cfg(feature = "agent")]
pub type AgentBuilder =
    for<'a> fn(&'a Config, &'a AwsClients) -> futures::future::BoxFuture<'a, Result<agent::Runtime, agent::AgentError>>;

/// Run control only (`agent::Runtime::control`: no model, no tools): chat,
/// confirm, cancel, sweep.
#[cfg(feature = "agent")]
pub fn run_control<'a>(
    config: &'a Config,
    clients: &'a AwsClients,
) -> futures::future::BoxFuture<'a, Result<agent::Runtime, agent::AgentError>> {
    Box::pin(async move { agent::Runtime::control(config, clients) })
}

/// The whole agent (model, tools, domain layer): the step function.
#[cfg(feature = "step")]
pub fn whole_agent<'a>(
    config: &'a Config,
    clients: &'a AwsClients,
) -> futures::future::BoxFuture<'a, Result<agent::Runtime, agent::AgentError>> {
    Box::pin(agent::Runtime::from_config(config, clients))
}
