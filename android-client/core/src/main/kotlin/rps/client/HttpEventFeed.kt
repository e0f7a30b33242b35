package rps.client

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.channels.awaitClose
import kotlinx.coroutines.channels.trySendBlocking
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.delay
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.buffer
import kotlinx.coroutines.flow.callbackFlow
import kotlinx.coroutines.flow.flow
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.Response
import okhttp3.sse.EventSource
import okhttp3.sse.EventSourceListener
import okhttp3.sse.EventSources
import java.io.IOException
import java.util.UUID

/**
 * Follows a lobby's events live over SSE (okhttp-sse). When a stream drops it reconnects with
 * `Last-Event-ID`, so nothing is missed or repeated; after [sseFailuresBeforePolling] failed
 * connections in a row it long-polls `GET /v1/lobbies/{id}/events?after=&wait=` for
 * [pollsBeforeSseRetry] requests before it tries SSE again. The signed heads that come with the
 * events (after each SSE batch, with each page) are delivered in order with them, each after the
 * events it names.
 */
class HttpEventFeed(
    private val api: HttpRpsApi,
    private val pollWaitSeconds: Int = 25,
    private val sseFailuresBeforePolling: Int = 2,
    private val pollsBeforeSseRetry: Int = 20,
    private val backoffMs: Long = 200,
) : EventFeed {
    /** Counters for tests and diagnostics. */
    @Volatile var sseConnections = 0
        private set

    @Volatile var polls = 0
        private set

    private val base = api.baseUrl.trimEnd('/')
    private val sseClient: OkHttpClient = api.http.newBuilder()
        .readTimeout(60, java.util.concurrent.TimeUnit.SECONDS) // heartbeats arrive about every 15 s (no java.time: API 23)
        .build()

    override fun follow(lobbyId: String, after: Long): Flow<FeedItem> = flow {
        var last = after
        var failures = 0
        while (true) {
            currentCoroutineContext().ensureActive()
            if (failures < sseFailuresBeforePolling) {
                var received = false
                try {
                    stream(lobbyId, last).collect { item ->
                        when (item) {
                            is SignedHead -> emit(item)
                            is ChainEvent -> if (item.seq > last) {
                                emit(item)
                                last = item.seq
                                received = true
                            }
                        }
                    }
                    failures = 0 // the server ended the stream cleanly (shutdown): reconnect
                } catch (e: CancellationException) {
                    throw e
                } catch (e: Exception) {
                    failures = if (received) 1 else failures + 1
                }
                delay(backoffMs)
            } else {
                repeat(pollsBeforeSseRetry) {
                    try {
                        polls++
                        val page = api.call { api.events.listEvents(UUID.fromString(lobbyId), last, 1000, pollWaitSeconds) }
                        for (dto in page.events) {
                            val e = Mappers.event(dto)
                            if (e.seq > last) {
                                emit(e)
                                last = e.seq
                            }
                        }
                        emit(Mappers.head(page.head)) // it names the page's last event
                    } catch (e: RpsException) {
                        if (!e.retryable) throw e
                        delay(backoffMs)
                    }
                }
                failures = 0
            }
        }
    }

    class StreamFailure(message: String, cause: Throwable?) : IOException(message, cause)

    private fun stream(lobbyId: String, after: Long): Flow<FeedItem> = callbackFlow {
        val request = Request.Builder()
            .url("$base/v1/lobbies/$lobbyId/events/stream?after=$after")
            .header("Accept", "text/event-stream")
            .apply { if (after > 0) header("Last-Event-ID", after.toString()) }
            .build()
        sseConnections++
        val source = EventSources.createFactory(sseClient).newEventSource(
            request,
            object : EventSourceListener() {
                override fun onEvent(eventSource: EventSource, id: String?, type: String?, data: String) {
                    val item = try {
                        if (type == "head") Mappers.headJson(data) else Mappers.eventJson(data)
                    } catch (ex: Exception) {
                        close(StreamFailure("undecodable ${type ?: "event"}: ${ex.message}", ex))
                        return
                    }
                    trySendBlocking(item)
                }

                override fun onFailure(eventSource: EventSource, t: Throwable?, response: Response?) {
                    close(StreamFailure("stream failed (HTTP ${response?.code})", t))
                }

                override fun onClosed(eventSource: EventSource) {
                    close()
                }
            },
        )
        awaitClose { source.cancel() }
    }.buffer(256)
}
