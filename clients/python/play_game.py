"""Plays whole games against a real rpsd with the client openapi-python-client generated from
openapi.yaml, unchanged, and verifies them as a third party would.

scripts/test-generated-clients.sh generates the package `rps_client` and runs

    python play_game.py URL ADMIN_TOKEN CLIENT_DIR DEADLINE_MS

Accounts with their own Ed25519 keys, a lobby, registrations, commitments and reveals each signed
by its player (issue 31: the message checked against tournament/testdata/signed_actions.json
first, the signatures sent in the operations' Rps-* header parameters), an unsigned action
refused, a refusal read as a problem, a stage that expires at its deadline, the event stream followed live with a dropped connection resumed from
Last-Event-ID, the hash chain, the stage digests and the signed heads checked with blake2b
(hashlib) and Ed25519 (cryptography), the ruleset fetched by content hash. Test code, not a
library.
"""

import hashlib
import json
import os
import secrets
import sys
import threading
import time

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

URL, ADMIN_TOKEN, CLIENT_DIR, DEADLINE_MS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, CLIENT_DIR)

from rps_client import AuthenticatedClient, Client  # noqa: E402
from rps_client.api.accounts import create_account, get_me  # noqa: E402
from rps_client.api.admin import credit_account, get_admin_ledger  # noqa: E402
from rps_client.api.events import get_event, list_events, stream_events  # noqa: E402
from rps_client.api.games import get_game, get_round  # noqa: E402
from rps_client.api.log import get_log  # noqa: E402
from rps_client.api.lobbies import create_lobby, get_lobby  # noqa: E402
from rps_client.api.operations import get_open_api_spec, list_signing_keys  # noqa: E402
from rps_client.api.play import commit_move, register_player, reveal_move  # noqa: E402
from rps_client.api.rulesets import get_ruleset_by_hash  # noqa: E402
from rps_client.models import (  # noqa: E402
    AccountCreated,
    CommitRequest,
    CreateAccountRequest,
    CreateLobbyRequest,
    EventPage,
    GameConfigInput,
    Lobby,
    MoneyTransferRequest,
    MovesClosedEvent,
    Problem,
    RevealRequest,
    RoundResolvedEvent,
    RoundTranscript,
)

checks = 0
# A game id no lobby has, for a signature that names the wrong game.
RandomGame = "00000000-0000-4000-8000-000000000000"


def check(ok, what):
    global checks
    if not ok:
        raise AssertionError(what)
    checks += 1


def expect(value, cls, what):
    check(isinstance(value, cls), f"{what}: got {value!r}, want a {cls.__name__}")
    return value


def blake2b256(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=32).digest()


def canonical(value) -> bytes:
    """RFC 8785 for the values of this API (integers only, ASCII keys): Python's encoder with
    sorted keys, no whitespace and raw UTF-8 writes exactly the canonical form."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def verify_chain(events):
    """Recomputes every hash of a log from its first event, as the contract's `Event` says."""
    prev = bytes(32)
    for i, e in enumerate(events, start=1):
        check(e["seq"] == i, f"event {i} has seq {e['seq']}")
        check(e["prevHash"] == prev.hex(), f"event {i}: prevHash is not the previous hash")
        body = {k: e[k] for k in ("seq", "type", "lobbyId", "gameId", "at", "data")}
        prev = blake2b256(prev + canonical(body))
        check(e["hash"] == prev.hex(), f"event {i} ({e['type']}): hash does not recompute")


def verify_head(head: dict, keys: dict, events):
    """A signed head: its signature over the contract's bytes, and that it names a chained event."""
    signed = b"rps-signed-head-v1\n" + canonical({k: head[k] for k in ("at", "hash", "keyId", "lobbyId", "seq")})
    Ed25519PublicKey.from_public_bytes(bytes.fromhex(keys[head["keyId"]])).verify(bytes.fromhex(head["signature"]), signed)
    check(events[head["seq"] - 1]["hash"] == head["hash"], f"head {head['seq']} is not on the chain")


def digest(values, salt: bytes = b"") -> str:
    """The digest of a stage's sealed values: the canonical array of {player, value} by player,
    after the round's salt for the commitments (revealed with the round, never before it)."""
    elems = sorted(({"player": p, "value": v} for p, v in values), key=lambda x: x["player"].encode())
    return blake2b256(salt + canonical(elems)).hex()


VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tournament", "testdata", "signed_actions.json")


def action_message(fields: dict) -> bytes:
    """What a player's key signs for an action: the domain line, then the RFC 8785 JSON of every
    member (null where the action has none)."""
    return b"rps-action-v1\n" + canonical(fields)


class PlayerKey:
    """A player's Ed25519 key, made here; the server only ever sees its public half."""

    def __init__(self, private=None):
        self.private = private or Ed25519PrivateKey.generate()
        public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_key, self.key_id = public.hex(), blake2b256(public)[:8].hex()

    def fields(self, origin, action, payload, player=None, lobby=None, game=None, round_=None, idempotency_key=None, signed_at=None):
        return {
            "action": action, "gameId": game and str(game), "idempotencyKey": idempotency_key, "keyId": self.key_id,
            "lobbyId": lobby and str(lobby), "origin": origin, "payload": payload, "player": player and str(player),
            "round": round_, "signedAt": int(time.time() * 1000) if signed_at is None else signed_at,
        }

    def sign(self, fields) -> str:
        return self.private.sign(action_message(fields)).hex()

    def headers(self, origin, action, payload, **where):
        """The keyword arguments of a signed operation: its Idempotency-Key (fresh, except for
        sign_up, which takes none) and the Rps-* header parameters."""
        if action != "sign_up":
            where.setdefault("idempotency_key", secrets.token_hex(16))
        fields = self.fields(origin, action, payload, **where)
        kwargs = {"rps_key_id": self.key_id, "rps_signed_at": fields["signedAt"], "rps_signature": self.sign(fields)}
        if fields["gameId"] is not None:
            kwargs["rps_game_id"] = fields["gameId"]
        if fields["round"] is not None:
            kwargs["rps_round"] = fields["round"]
        if fields["idempotencyKey"] is not None:
            kwargs["idempotency_key"] = fields["idempotencyKey"]
        return kwargs


def check_vectors():
    """The message builder and the key against the vectors every client checks, before playing."""
    with open(VECTORS, encoding="utf-8") as f:
        vectors = json.load(f)
    key = PlayerKey(Ed25519PrivateKey.from_private_bytes(bytes.fromhex(vectors["seed"])))
    check(key.public_key == vectors["publicKey"] and key.key_id == vectors["keyId"], "the vectors' key and key id")
    for v in vectors["vectors"]:
        f = v["fields"]
        rebuilt = key.fields(f["origin"], f["action"], f["payload"], player=f["player"], lobby=f["lobbyId"], game=f["gameId"],
                             round_=f["round"], idempotency_key=f["idempotencyKey"], signed_at=f["signedAt"])
        check(action_message(rebuilt) == v["message"].encode(), f"vector {v['action']}: the message")
        check(key.sign(rebuilt) == v["signature"], f"vector {v['action']}: the signature")
    sealed = vectors["sealedSignature"]
    check(blake2b256(bytes.fromhex(sealed["signature"])).hex() == sealed["sealed"], "the sealed signature")


def sse_messages(lines):
    """The messages of an event stream, as (id, event, data) with comments skipped."""
    msg = {}
    data = []
    for line in lines:
        if line == "":
            if data or msg:
                yield msg.get("id"), msg.get("event", "message"), "\n".join(data)
            msg, data = {}, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            else:
                msg[field] = value


class Follower(threading.Thread):
    """Follows a lobby's stream live until `until` is streamed, dropping the connection once after
    `drop_after` and resuming from the last id received, as a client on a bad network does."""

    def __init__(self, lobby, drop_after, until):
        super().__init__(daemon=True)
        self.lobby, self.drop_after, self.until = lobby, drop_after, until
        self.events, self.heads, self.connections, self.error = [], [], 0, None

    def run(self):
        try:
            last, dropped = None, False
            while True:
                headers = {"Last-Event-ID": last} if last else {}
                self.connections += 1
                with httpx.stream("GET", f"{URL}/v1/lobbies/{self.lobby}/events/stream", headers=headers, timeout=30) as r:
                    check(r.status_code == 200, f"stream: {r.status_code}")
                    for mid, event, data in sse_messages(r.iter_lines()):
                        if event == "head":
                            self.heads.append(json.loads(data))
                            continue
                        e = json.loads(data)
                        check(mid == str(e["seq"]) and event == e["type"], f"stream message {mid} {event} carries {e['seq']}")
                        self.events.append(e)
                        last = mid
                        if event == self.until:
                            return
                        if event == self.drop_after and not dropped:
                            dropped = True
                            break
        except Exception as exc:  # reported by the main thread
            self.error = exc


class Player:
    """An account, its bearer client and its key; its actions are signed on the log's origin."""

    def __init__(self, name, anon, admin, origin):
        self.key, self.origin = PlayerKey(), origin
        signed = self.key.headers(origin, "sign_up", {"name": name, "publicKey": self.key.public_key})
        body = CreateAccountRequest(name=name, public_key=self.key.public_key)
        created = expect(create_account.sync(client=anon, body=body, **signed), AccountCreated, "create account with a key")
        expect(credit_account.sync(created.account.id, client=admin, body=MoneyTransferRequest(amount=1000)), type(created.account), "credit")
        self.id, self.client = created.account.id, AuthenticatedClient(base_url=URL, token=created.token)
        check(get_me.sync(client=self.client).balance == 1000, f"{name}'s balance after the credit")

    def signed(self, action, payload, lobby, game, round_=None):
        return self.key.headers(self.origin, action, payload, player=self.id, lobby=lobby, game=game, round_=round_)

    def register(self, lobby, game, bet):
        return register_player.sync(lobby, client=self.client, **self.signed("register", {"bet": bet}, lobby, game))

    def commit(self, lobby, game, round_, commitment, detailed=False):
        call = commit_move.sync_detailed if detailed else commit_move.sync
        return call(lobby, client=self.client, body=CommitRequest(commitment=commitment),
                    **self.signed("commit", {"commitment": commitment}, lobby, game, round_))

    def reveal(self, lobby, game, round_, reveal):
        return reveal_move.sync(lobby, client=self.client, body=RevealRequest(reveal=reveal),
                                **self.signed("reveal", {"reveal": reveal}, lobby, game, round_))


def verify_signed_moves(events, transcript, players, origin, bet):
    """Every registration, commitment and reveal of the game signed by its player's key, over the
    message rebuilt from the log and the transcript, as a third party checks it."""
    keys = {str(p.id): Ed25519PublicKey.from_public_bytes(bytes.fromhex(p.key.public_key)) for p in players}
    moves = {str(m.account_id): m for m in transcript.moves}
    signed = 0
    for e in events:
        auth, data = e["data"].get("auth"), e["data"]
        if e["type"] not in ("player_registered", "move_committed", "move_revealed"):
            continue
        check(auth is not None, f"event {e['seq']} ({e['type']}) carries its player's signature")
        player = data["player"]
        fields = {"action": auth["action"], "gameId": e["gameId"], "idempotencyKey": auth["idempotencyKey"], "keyId": auth["keyId"],
                  "lobbyId": e["lobbyId"], "origin": origin, "player": player, "round": None, "signedAt": auth["signedAt"]}
        if e["type"] == "player_registered":
            fields["payload"], signature = {"bet": bet}, auth["signature"]
        elif e["type"] == "move_committed":
            m = moves[player]
            fields["round"], fields["payload"], signature = data["round"], {"commitment": m.commitment}, m.commit_signature
            check(blake2b256(bytes.fromhex(signature)).hex() == auth["sealedSignature"], f"event {e['seq']}: the sealed signature")
        else:
            m = moves[player]
            fields["round"], fields["payload"], signature = data["round"], {"reveal": m.reveal}, m.reveal_signature
            check(blake2b256(bytes.fromhex(signature)).hex() == auth["sealedSignature"], f"event {e['seq']}: the sealed signature")
        keys[player].verify(bytes.fromhex(signature), action_message(fields))
        signed += 1
    check(signed == 6, f"two registrations, commitments and reveals signed ({signed})")


def main():
    check_vectors()
    anon = Client(base_url=URL)
    admin = AuthenticatedClient(base_url=URL, token=ADMIN_TOKEN)
    keys = {k.key_id: k.public_key for k in list_signing_keys.sync(client=anon).keys}
    origin = get_log.sync(client=anon).origin
    alice = Player("alice (python)", anon, admin, origin)
    bob = Player("bob (python)", anon, admin, origin)
    alice_id, bob_id = alice.id, bob.id

    # A lobby: its nullable fields (no next config; an admin is not in the game) read as None.
    config = GameConfigInput(bet_size=100, players_count_limit=2)
    lobby = expect(create_lobby.sync(client=admin, body=CreateLobbyRequest(name="python", config=config)), Lobby, "create lobby")
    check(lobby.next_config is None and lobby.game.you is None and lobby.game.stage.value == "registration", "a new lobby")
    follower = Follower(lobby.id, drop_after="round_started", until="game_finished")
    follower.start()

    # An unsigned action of an account with a key is refused, and the problem says what to do.
    unsigned = register_player.sync_detailed(lobby.id, client=alice.client, idempotency_key=secrets.token_hex(8))
    problem = expect(unsigned.parsed, Problem, "an unsigned registration")
    check(unsigned.status_code == 401 and problem.code == "signature_required", f"unsigned: {problem}")
    # A signature names its game: one made for another game is refused, and changes nothing.
    stale = register_player.sync_detailed(lobby.id, client=alice.client, **alice.signed("register", {"bet": 100}, lobby.id, RandomGame))
    check(stale.status_code == 409 and stale.parsed.code == "stale_signature", f"a signature for another game: {stale.parsed}")

    game_id = lobby.game.id
    expect(alice.register(lobby.id, game_id, 100), Lobby, "alice registers")
    started = expect(bob.register(lobby.id, game_id, 100), Lobby, "bob registers")
    check(started.game.stage.value == "moves" and started.game.round_ == 1, "the full game starts round 1")

    # Commit (blake2b-256 of digit + password), each seeing only its own commitment.
    reveals = {alice_id: "0" + secrets.token_hex(16), bob_id: "2" + secrets.token_hex(16)}  # Rock, Scissors
    commitments = {p: hashlib.blake2b(r.encode(), digest_size=32).hexdigest() for p, r in reveals.items()}
    after = expect(alice.commit(lobby.id, game_id, 1, commitments[alice_id]), Lobby, "alice commits")
    check(after.game.you.commitment == commitments[alice_id], "alice sees her own commitment")

    # A refusal is a problem: its code, status and request id (also in the X-Request-Id header).
    again = alice.commit(lobby.id, game_id, 1, commitments[alice_id], detailed=True)
    problem = expect(again.parsed, Problem, "a second commitment")
    check(again.status_code == 409 and problem.code == "already_committed" and problem.status == 409, f"refusal {problem}")
    check(again.headers["X-Request-Id"] == problem.request_id, "the problem's requestId is the X-Request-Id header")

    moved = expect(bob.commit(lobby.id, game_id, 1, commitments[bob_id]), Lobby, "bob commits")
    check(moved.game.stage.value == "reveal", "every commitment opens the reveal stage")
    wrong = expect(bob.reveal(lobby.id, game_id, 1, "1" + reveals[bob_id][1:]), Problem, "a wrong reveal")
    check(wrong.code == "commitment_mismatch" and wrong.status == 422, f"wrong reveal: {wrong}")
    expect(alice.reveal(lobby.id, game_id, 1, reveals[alice_id]), Lobby, "alice reveals")
    expect(bob.reveal(lobby.id, game_id, 1, reveals[bob_id]), Lobby, "bob reveals")

    game = get_game.sync(started.game.id, client=anon)
    check(game.stage.value == "finished" and game.winner == alice_id and game.payout == 200, f"Rock beats Scissors: {game}")
    check(get_me.sync(client=alice.client).balance == 1100 and get_me.sync(client=bob.client).balance == 900, "the winner took both bets")

    # The log: a page, read with the generated types, hashes into a chain; the live stream saw the
    # same events across its dropped connection, without a gap or a duplicate.
    follower.join(timeout=30)
    check(not follower.is_alive() and follower.error is None, f"the stream follower: {follower.error}")
    page = expect(list_events.sync(lobby.id, client=anon, after=0, limit=1000), EventPage, "the events")
    events = [e.to_dict() for e in page.events]
    verify_chain(events)
    # An event carries its place in the transparency log (leafIndex) wherever it is sent once
    # logged: in a page read without waiting, and in a stream catching up; events streamed as they
    # commit come before the log has them. Where two copies both have it, it is the same.
    def unlogged(copies):
        return [{k: v for k, v in e.items() if k != "leafIndex"} for e in copies]

    def same_leaves(copies):
        return all(c["leafIndex"] == e["leafIndex"] for c, e in zip(copies, events) if "leafIndex" in c and "leafIndex" in e)

    check(follower.connections == 2, f"the stream was resumed once ({follower.connections} connections)")
    check(unlogged(follower.events) == unlogged(events)[: len(follower.events)] and same_leaves(follower.events), "streamed events")
    check(follower.events[-1]["type"] == "game_finished", "the stream followed to the end of the game")
    for head in [page.head.to_dict(), get_lobby.sync(lobby.id, client=alice.client).head.to_dict(), *follower.heads]:
        verify_head(head, keys, events)

    # The stage digests against the round's transcript, and one event read typed.
    transcript = expect(get_round.sync(started.game.id, 1, client=anon), RoundTranscript, "round 1")
    by_type = {e["type"]: e for e in events}
    closed, resolved = by_type["moves_closed"], by_type["round_resolved"]
    salt = resolved["data"]["salt"]
    check("salt" not in closed["data"] and transcript.salt == salt, "the salt is revealed with the round, in its transcript too")
    check(closed["data"]["digest"] == digest(((str(m.account_id), m.commitment) for m in transcript.moves), bytes.fromhex(salt)), "the commitments' digest")
    check(resolved["data"]["digest"] == digest((str(m.account_id), m.reveal) for m in transcript.moves), "the reveals' digest")
    verify_signed_moves(events, transcript, (alice, bob), origin, 100)
    typed = expect(get_event.sync(lobby.id, closed["seq"], client=anon), MovesClosedEvent, "moves_closed, typed")
    check(typed.data.digest == closed["data"]["digest"] and typed.data.committed == 2, "typed moves_closed")
    typed = expect(get_event.sync(lobby.id, resolved["seq"], client=anon), RoundResolvedEvent, "round_resolved, typed")
    check(typed.data.present == 0b101 and typed.data.survivors == 0b001, "Rock and Scissors present, Rock survives")

    # The exact ruleset of the game, by its content hash.
    ruleset = get_ruleset_by_hash.sync_detailed(game.ruleset_hash, client=anon)
    check(blake2b256(ruleset.content).hex() == game.ruleset_hash, "the ruleset hashes to the game's rulesetHash")
    check([w.name for w in ruleset.parsed.weapons][:3] == ["Rock", "Paper", "Scissors"], "the ruleset's weapons")

    # The stream as a generated client can read it: follow=false ends at the head.
    snapshot = stream_events.sync(lobby.id, client=anon, follow=False)
    messages = list(sse_messages(snapshot.split("\n")))
    snapshot_events = [json.loads(d) for _, ev, d in messages if ev != "head"]
    check(unlogged(snapshot_events) == unlogged(events) and same_leaves(snapshot_events), "the snapshot stream is the log")
    check(messages[-1][1] == "head" and json.loads(messages[-1][2])["seq"] == len(events), "the snapshot ends with its head")

    # A deadline: only alice commits; when the moves stage expires she wins by default.
    quick = GameConfigInput(bet_size=10, players_count_limit=2, move_timeout_ms=DEADLINE_MS)
    timed = create_lobby.sync(client=admin, body=CreateLobbyRequest(name="python deadline", config=quick))
    expect(alice.register(timed.id, timed.game.id, 10), Lobby, "alice registers (deadline)")
    expect(bob.register(timed.id, timed.game.id, 10), Lobby, "bob registers (deadline)")
    expect(alice.commit(timed.id, timed.game.id, 1, commitments[alice_id]), Lobby, "alice commits (deadline)")
    seen, finished = 0, None
    deadline = time.monotonic() + 30
    while finished is None and time.monotonic() < deadline:
        polled = list_events.sync(timed.id, client=anon, after=seen, wait=5)
        for e in polled.events:
            if e.type_ == "game_finished":
                finished = e.to_dict()
        seen = polled.next_
    check(finished is not None and finished["data"]["winner"] == str(alice_id), f"the deadline passed: {finished}")
    verify_chain([e.to_dict() for e in list_events.sync(timed.id, client=anon, limit=1000).events])

    report = get_admin_ledger.sync(client=admin)
    check(report.ok and report.entries_sum == 0, "the ledger balances")
    spec = get_open_api_spec.sync_detailed(client=anon)
    check(spec.status_code == 200 and spec.content.startswith(b"openapi: 3.0.3"), "GET /openapi.yaml")
    print(f"python (openapi-python-client): a signed game played and verified, {checks} checks passed")


if __name__ == "__main__":
    main()
