"""Quota callbacks shipped with the broker, one per KIP-257 scenario. Enable one with
`client.quota.callback.class=quotas.callbacks.quota_groups.QuotaGroupsCallback` (or
`...partition_proportional.PartitionProportionalCallback`), statically or at runtime."""
