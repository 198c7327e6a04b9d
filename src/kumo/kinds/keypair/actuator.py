"""KeyPair actuator: a Nova keypair made from a public key inline or in a ConfigMap or
Secret key.

A pass is the engine's owned-resource lifecycle (engine/lifecycle.py): read and check
the key (``InvalidPublicKey`` naming the field) → find the keypair (status.id only if
its public key carries this object's marker, else adopted by marker, else imported) →
make it again when its name or key differs (Nova cannot change a keypair: deleted, then
created at once under the same name) → create it, refusing a keypair that is not this
object's holding the name (``KeyPairExists``) → report.

Nothing is changed in place. Deletion deletes the keypair; ``deletionPolicy: Orphan``
makes it again with the orphan mark in the marker's place (crash-safe through
``status.releasing``).
"""

from __future__ import annotations

from kumo.api import kinds
from kumo.api.keypair import KeyPairSpec
from kumo.engine import lifecycle, orphan, ownership
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import sources
from kumo.kinds.keypair import plan
from kumo.ports.model import KeyPair

#: Nova makes a keypair within its create call: the next pass (from the cache) reports it.
CREATED_SECONDS = 0.5


class KeyPairActuator:
    info = kinds.KEY_PAIR

    async def reconcile(self, ctx: Context, obj: Obj, spec: KeyPairSpec) -> Result:
        text, field = await _public_key(ctx, obj, spec)
        key = plan.parse(text, field)
        name = plan.nova_name(spec, obj.namespace, obj.name)
        public_key = plan.marked(key, obj.uid)

        async def refuse_foreign() -> lifecycle.Wait | None:
            await _refuse_foreign(ctx, obj, name)
            return None

        async def create() -> KeyPair:
            created: KeyPair = await ctx.cloud.create_keypair(name, public_key)
            return created

        async def replace(keypair: KeyPair) -> lifecycle.Replacement | None:
            found = plan.replacement(keypair, name, public_key)
            if found is None:
                return None
            why, change = found
            if keypair.name != name:  # bad input fails before anything is deleted
                await _refuse_foreign(ctx, obj, name)
            if ctx.dry_run:  # Observe, Report, kumo plan: name the field, show the delete
                ctx.findings.append(change)
                return lifecycle.Replacement(why, wait=lifecycle.Wait(f"replacing: {why}"))
            return lifecycle.Replacement(why)  # Nova deletes at once: create in this pass

        async def report(keypair: KeyPair) -> Result:
            st = plan.status(keypair)
            return Result(
                phase="Ready",
                ready=True,
                reason="Ready",
                message=f"keypair {keypair.name} ({st['keyType']} {st['fingerprint']}) exists",
                status=st,
            )

        return await lifecycle.reconcile_owned(
            ctx,
            obj,
            lifecycle.Lifecycle(
                owned=_keypairs(ctx, obj, name, key, field),
                create=create,
                created=lambda kp: lifecycle.Wait(
                    f"keypair {kp.name} created", after=CREATED_SECONDS
                ),
                report=report,
                failpoint="after-keypair-create",
                status=plan.status,
                before_create=refuse_foreign,
                replace=replace,
            ),
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: KeyPairSpec | None) -> Result:
        """Delete every keypair carrying the marker (Nova deletes at once). A VM booted
        with it keeps the key it was given; a VM that still names this KeyPair waits
        for it before building a server again."""
        return await ownership.finalize_owned(ctx, obj, _keypairs(ctx, obj), after=0.5)

    async def release(self, ctx: Context, obj: Obj, spec: KeyPairSpec | None) -> Result:
        """``deletionPolicy: Orphan``: each keypair carrying the marker is made again with
        the orphan mark. ``status.releasing`` holds the key between Nova's delete and
        create, so a pass after a crash there puts it back."""
        name, pending = obj.status.get("id"), obj.status.get("releasing")
        if name and pending and await ctx.cloud.get_keypair(name) is None:
            await ctx.cloud.create_keypair(name, pending)
        return await orphan.release_owned(ctx, obj, _keypairs(ctx, obj))

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """A KeyPair depends on no other kind (a changed ConfigMap or Secret re-queues it
        through its declared references)."""
        return []


async def _public_key(ctx: Context, obj: Obj, spec: KeyPairSpec) -> tuple[str, str]:
    """The public key text and the field it comes from, in the object's own namespace."""
    source = spec.public_key_from
    if spec.public_key is not None and source is None:
        return spec.public_key, "spec.publicKey"
    if source is not None and spec.public_key is None:
        if source.config_map_ref is not None and source.secret_ref is None:
            ref, field = source.config_map_ref, "spec.publicKeyFrom.configMapRef"
            text = await sources.from_config_map(ctx, obj.namespace, ref.name, ref.key, field)
            return text, field
        if source.secret_ref is not None and source.config_map_ref is None:
            secret, field = source.secret_ref, "spec.publicKeyFrom.secretRef"
            text = await sources.from_secret(ctx, obj.namespace, secret.name, secret.key, field)
            return text, field
        raise TerminalError(
            "InvalidSpec",
            "give exactly one of configMapRef and secretRef",
            field="spec.publicKeyFrom",
        )
    raise TerminalError(
        "InvalidSpec", "give exactly one of publicKey and publicKeyFrom", field="spec"
    )


async def _refuse_foreign(ctx: Context, obj: Obj, name: str) -> None:
    """A keypair that is not this object's holding the name stays, and the object says so."""
    existing = await ctx.cloud.get_keypair(name)
    if existing is None or plan.owner(existing) == obj.uid:
        return
    whose = plan.owner(existing)
    held = (
        f"carries the marker of another Kumo object (uid {whose})"
        if whose
        else ("does not carry Kumo's marker")
    )
    raise TerminalError(
        "KeyPairExists",
        f"keypair {name!r} already exists and {held}: Kumo leaves it alone (take it over "
        "with spec.import, or choose another spec.name)",
        field="spec.name",
    )


def _keypairs(
    ctx: Context,
    obj: Obj,
    name: str = "",
    key: plan.PublicKey | None = None,
    field: str = "spec.publicKey",
) -> ownership.Owned[KeyPair]:
    """The object's keypair as the ownership routine sees it: the marker is the last word
    of its public key's comment; the ID is the name. ``spec.import`` (by name, or by
    ``id``, which for a keypair is its name too) checks the name and the key, and marks
    the keypair by making it again with the marker (Nova cannot change one)."""
    cloud = ctx.cloud

    async def get_by_id(keypair_name: str) -> KeyPair | None:
        found: KeyPair | None = await cloud.get_keypair(keypair_name)
        return found

    async def list_owned() -> list[KeyPair]:
        found: list[KeyPair] = await cloud.list_owned_keypairs(obj.uid)
        return found

    async def delete(keypair: KeyPair) -> None:
        await cloud.delete_keypair(keypair.name)

    async def find_by_name(keypair_name: str) -> list[KeyPair]:
        found = await get_by_id(keypair_name)
        return [found] if found is not None else []

    async def verify(keypair: KeyPair) -> list[Change]:
        assert key is not None
        return plan.import_mismatches(keypair, name, key, field)

    async def mark(keypair: KeyPair) -> KeyPair:
        assert key is not None
        # The ID first: a crash between the delete and the create leaves a status whose
        # next pass rebuilds the keypair from the spec (the same key: verify checked it).
        await ownership.record(ctx, obj, {"id": keypair.name, "keyName": keypair.name})
        await cloud.delete_keypair(keypair.name)
        marked: KeyPair = await cloud.create_keypair(keypair.name, plan.marked(key, obj.uid))
        return marked

    async def release(keypair: KeyPair) -> None:
        text = plan.released(keypair.public_key, obj.uid)
        await ownership.record(ctx, obj, {"releasing": text})
        await cloud.delete_keypair(keypair.name)
        await cloud.create_keypair(keypair.name, text)

    async def fetch(keypair: KeyPair) -> KeyPair | None:
        listed: list[KeyPair] = await cloud.fetch_keypairs()  # the API's (one call)
        return next((k for k in listed if k.name == keypair.name), None)

    return ownership.Owned(
        noun="keypair",
        id_of=lambda keypair: keypair.name,
        owner_of=plan.owner,
        get_by_id=get_by_id,
        list_owned=list_owned,
        delete=delete,
        recorded=lambda keypair: {"keyName": keypair.name},
        unfit=lambda keypair: keypair.name != name,
        find_by_name=find_by_name,
        verify=verify,
        mark=mark,
        release=release,
        fetch=fetch,
    )
