import AttachFetch
import Hummingbird
import NIOCore

/// Notices, per connection, that the client went away (its side closed, or the connection
/// died) while a request is being answered, so that the request's batch can be cancelled.
///
/// Why not Hummingbird's `consumeWithCancellationOnInboundClose`: it watches by reading the
/// connection's next request part and closes the connection after the response, so every
/// client would lose keep-alive (a new TCP connection per call). This handler only observes
/// the events NIO delivers anyway; the connection stays reusable.
final class ClientDisconnectWatch: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    // Request parts pass through untouched (the default channelRead forwards them, never
    // unwrapped), so their type need not be named.
    typealias InboundIn = NIOAny

    private struct State {
        var gone = false
        var onGone: (@Sendable () -> Void)?
    }

    // Written by the event loop (events) and by request tasks (watch/unwatch): the lock makes
    // this handler safe to share between them.
    private let state = Locked(State())

    /// Every open connection's watch, by its channel: a request finds its connection's watch
    /// with a lookup here, where `pipeline.handler(type:)` is a future completed on the event
    /// loop (the hop and the future were ~4 % of the service's CPU under a load of cache hits).
    /// An entry lives from the handler's addition to its removal, which NIO does when the
    /// channel closes, so the identifier is never that of a channel freed and reused.
    private static let byChannel = Locked<[ObjectIdentifier: ClientDisconnectWatch]>([:])

    static func watch(of channel: any Channel) -> ClientDisconnectWatch? {
        byChannel.withLock { $0[ObjectIdentifier(channel)] }
    }

    /// Connections watched now, in every server of the process (for tests).
    static var watching: Int { byChannel.withLock { $0.count } }

    func handlerAdded(context: ChannelHandlerContext) {
        Self.byChannel.withLock { $0[ObjectIdentifier(context.channel)] = self }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        Self.byChannel.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(context.channel)) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { clientWentAway() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        clientWentAway()
        context.fireChannelInactive()
    }

    private func clientWentAway() {
        let onGone = state.withLock { state -> (@Sendable () -> Void)? in
            state.gone = true
            defer { state.onGone = nil }
            return state.onGone
        }
        onGone?()
    }

    /// Runs `operation` in a task of its own that is cancelled if the client goes away first
    /// (or the calling task is cancelled).
    func cancellingOnDisconnect<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let task = Task { try await operation() }
        let goneAlready = state.withLock { state -> Bool in
            if !state.gone { state.onGone = { task.cancel() } }
            return state.gone
        }
        if goneAlready { task.cancel() }
        defer { state.withLock { $0.onGone = nil } }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }
}

extension Channel {
    /// This connection's disconnect watch (installed by the server on every connection).
    var disconnectWatch: ClientDisconnectWatch {
        get async throws {
            if let watch = ClientDisconnectWatch.watch(of: self) { return watch }
            return try await pipeline.handler(type: ClientDisconnectWatch.self).get()
        }
    }
}
