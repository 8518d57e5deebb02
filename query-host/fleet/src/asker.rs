//! The fleet's operations (`loupe_api::ops::FleetApi`) asked over NATS: a [`Coordinator`], who
//! signs, and where an analysis' module comes from and is merged. The CLI's `--nats` mode holds
//! one; an agent's HTTP API makes one per caller — its host key signing for the caller's team —
//! inside [`Guarded`], which checks the caller's scopes and records what it starts, as the core's
//! `ActingFor` does for the host's operations.
//!
//! The list's methods are blocking, like the host's: each one waits on the coordinator's future
//! with the runtime's handle, so it must not be called on one of that runtime's workers (the
//! HTTP API calls it on the blocking pool, the CLI from its main thread).

use std::sync::Arc;

use super::{
    Coordinator, FleetError, merge_with,
    modules::Shipped,
    signer::Signer,
    wire::{ReadBody, ReadReply},
};
use loupe_api::{
    access::{Caller, Scope},
    fleet::{FleetInvokeOrder, FleetRunOrder, HostProfileOrder, Selector},
    model::{FleetHostsView, FleetInvokeView, FleetRunView, ProfileView, RunView},
    ops::{FleetApi, FleetOp},
};
use loupe_core::{CoreError, CoreResult, Host, analyses::FleetModule};

/// Where `fleet_invoke` finds the module it sends, and whose runtime merges the partials.
pub enum Modules {
    /// An agent's: the analysis uploaded to it under that name, shipped to the fleet's object
    /// store signed for the caller, merged on the agent's runtime for the caller's team.
    Local { host: Arc<Host>, team: String },
    /// The CLI's: `wasm` shipped now under that name (signed by the CLI's key, which needs
    /// `upload` on the hosts), or else the module the fleet's catalog holds under it (shipped
    /// before by a key with `upload`); merged on `host`, the CLI's own runtime over a
    /// throwaway store (`None`: the command merges nothing).
    Catalog { host: Option<Arc<Host>>, wasm: Option<Vec<u8>> },
}

/// The fleet over NATS, as the fleet's operations.
pub struct Asker<'a> {
    pub coordinator: &'a Coordinator,
    pub signer: Signer,
    pub modules: Modules,
    pub runtime: tokio::runtime::Handle,
}

impl Asker<'_> {
    fn wait<T>(&self, f: impl Future<Output = Result<T, FleetError>>) -> CoreResult<T> {
        self.runtime.block_on(f).map_err(FleetError::into_core)
    }

    /// The module to send for `order` and the runtime that merges: the agent's own analysis,
    /// shipped now, or the one the catalog names.
    fn module(&self, name: &str) -> CoreResult<(Shipped, FleetModule, &Arc<Host>, String)> {
        match &self.modules {
            Modules::Local { host, team } => {
                let (module, bytes) = host.analyses()?.local_module(name)?;
                let shipped = self.wait(self.coordinator.ship(name, &bytes, &self.signer))?;
                Ok((shipped, module, host, team.clone()))
            }
            Modules::Catalog { host, wasm } => {
                let host = host
                    .as_ref()
                    .ok_or_else(|| CoreError::Internal("no analysis runtime to merge the hosts' answers".into()))?;
                let shipped = match wasm {
                    Some(bytes) => self.wait(self.coordinator.ship(name, bytes, &self.signer))?,
                    None => self.wait(self.coordinator.lookup(name))?,
                };
                let sha = shipped.entry.sha256.clone();
                let module = host.analyses()?.fleet_module(host.store(), name, &sha, || match wasm {
                    Some(bytes) => Ok(bytes.clone()),
                    None => self.wait(self.coordinator.fetch(&sha)).map_err(|e| e.to_string()),
                })?;
                Ok((shipped, module, host, "cli".into()))
            }
        }
    }

    fn read(&self, host: &str, body: ReadBody) -> CoreResult<ReadReply> {
        self.wait(self.coordinator.read(host, body, &self.signer))
    }
}

impl FleetApi for Asker<'_> {
    fn fleet_hosts(&self, hosts: Selector) -> CoreResult<FleetHostsView> {
        self.wait(self.coordinator.hosts(&hosts, &self.signer))
    }

    fn fleet_run(&self, order: FleetRunOrder) -> CoreResult<FleetRunView> {
        self.wait(self.coordinator.run(&order, &self.signer))
    }

    fn fleet_invoke(&self, order: FleetInvokeOrder) -> CoreResult<FleetInvokeView> {
        let (shipped, module, host, team) = self.module(&order.name)?;
        let merge = merge_with(Arc::clone(host), module, team, order.range, order.params.clone());
        self.wait(self.coordinator.invoke(&order, &shipped, &self.signer, merge))
    }

    fn fleet_host_run(&self, host: String, id: u64) -> CoreResult<RunView> {
        match self.read(&host, ReadBody::Run { id })? {
            ReadReply::Run(view) => Ok(view),
            ReadReply::Profile(_) => {
                Err(CoreError::Internal(format!("host {host} answered a run read with a profile")))
            }
        }
    }

    fn fleet_host_profile(&self, order: HostProfileOrder) -> CoreResult<ProfileView> {
        let HostProfileOrder { host, range, kind } = order;
        let body = ReadBody::Profile { from_unix_ns: range.from_unix_ns(), to_unix_ns: range.to_unix_ns(), kind };
        match self.read(&host, body)? {
            ReadReply::Profile(profile) => Ok(ProfileView::new(&profile).of_kind(kind)),
            ReadReply::Run(_) => Err(CoreError::Internal(format!("host {host} answered a profile read with a run"))),
        }
    }
}

/// The fleet's operations for one caller of an agent's HTTP API: each needs the caller's
/// `fleet` scope and the operation's own (which the targets check again against the signed
/// request), and what starts work on other hosts is recorded in this host's audit trail as
/// the operation's name, however it ended — refused here, refused by the hosts, or done.
pub struct Guarded<'a> {
    /// The fleet; `None`: this agent is not in one (every operation answers `not_in_fleet`,
    /// after the caller's scopes are checked and, where it is recorded, recorded).
    pub api: Option<&'a dyn FleetApi>,
    pub caller: Caller,
    pub host: &'a Host,
}

impl Guarded<'_> {
    /// `work` if the caller may ask for `op`; recorded (as `target` says it) if `op` is.
    fn act<T>(
        &self,
        op: FleetOp,
        target: impl FnOnce() -> String,
        work: impl FnOnce(&dyn FleetApi) -> CoreResult<T>,
    ) -> CoreResult<T> {
        let target = op.recorded().then(target);
        let outcome = self
            .caller
            .require(Scope::Fleet)
            .and_then(|()| self.caller.require(op.scope()))
            .map_err(CoreError::from)
            .and_then(|()| {
                self.api.ok_or(CoreError::NotInFleet(
                    "this agent is not in a fleet: start it with --nats URL (and --rack, --dc)",
                ))
            })
            .and_then(work);
        if let Some(target) = target {
            self.host.audit().record(&self.caller, op.name(), &target, &outcome);
        }
        outcome
    }
}

impl FleetApi for Guarded<'_> {
    fn fleet_hosts(&self, hosts: Selector) -> CoreResult<FleetHostsView> {
        self.act(FleetOp::FleetHosts, String::new, |api| api.fleet_hosts(hosts))
    }

    fn fleet_run(&self, order: FleetRunOrder) -> CoreResult<FleetRunView> {
        let target = order.target_text();
        self.act(FleetOp::FleetRun, || target, |api| api.fleet_run(order))
    }

    fn fleet_invoke(&self, order: FleetInvokeOrder) -> CoreResult<FleetInvokeView> {
        let target = order.target_text();
        self.act(FleetOp::FleetInvoke, || target, |api| api.fleet_invoke(order))
    }

    fn fleet_host_run(&self, host: String, id: u64) -> CoreResult<RunView> {
        self.act(FleetOp::FleetHostRun, String::new, |api| api.fleet_host_run(host, id))
    }

    fn fleet_host_profile(&self, order: HostProfileOrder) -> CoreResult<ProfileView> {
        self.act(FleetOp::FleetHostProfile, String::new, |api| api.fleet_host_profile(order))
    }
}
