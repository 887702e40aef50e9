import NIOCore
import NIOHTTP1

/// One connection's requests, on its event loop: each goes to the server's handler threads in
/// turn (a response must be complete before the next begins), and the connection closes when a
/// response asks for it. Request bodies are read and ignored; the pipeline only sends GET.
final class ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart

    private let server: LoopbackHTTPServer
    /// Nil until the server admitted the connection.
    private var connection: HTTPConnection?
    private var waiting = CircularBuffer<HTTPRequest>()
    private var busy = false

    init(server: LoopbackHTTPServer) { self.server = server }

    func channelActive(context: ChannelHandlerContext) {
        guard server.admit(context.channel) else {
            context.close(promise: nil)
            return
        }
        connection = HTTPConnection(channel: context.channel, server: server)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if connection != nil { server.release(context.channel) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        waiting.append(HTTPRequest(head))
        serveNext(context: context)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A request the decoder cannot parse: nothing sensible to answer.
        context.close(promise: nil)
    }

    private func serveNext(context: ChannelHandlerContext) {
        guard !busy, let connection, context.channel.isActive, let request = waiting.popFirst() else { return }
        busy = true
        server.serve(request, on: connection, eventLoop: context.eventLoop).assumeIsolated().whenComplete { result in
            self.busy = false
            if (try? result.get()) ?? true {
                context.close(promise: nil)
            } else {
                self.serveNext(context: context)
            }
        }
    }
}
