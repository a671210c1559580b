import NIOCore
import Synchronization

/// At most `limit` connections open at once from one client address: beyond that, a new one is
/// closed as it arrives. Without it one client holding half-sent requests (1,100 of them, each
/// kept to the idle timeout) takes every connection slot of the server, `/health` included.
///
/// Counted per IP address (the port is the client's own choice); Unix-socket clients share one
/// count. The counts live in one `ClientConnectionLimit` for the server.
final class ClientConnectionLimit: Sendable {
    let limit: Int
    private let open = Mutex<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes a place for the client, or nil when it has `limit` already.
    func admit(_ client: String) -> Bool {
        open.withLock { open in
            let n = open[client, default: 0]
            guard n < limit else { return false }
            open[client] = n + 1
            return true
        }
    }

    func release(_ client: String) {
        open.withLock { open in
            let n = open[client, default: 0] - 1
            open[client] = n > 0 ? n : nil
        }
    }

    /// The handler for one connection's pipeline.
    func handler() -> Handler { Handler(limit: self) }

    /// Counts its connection in when added to the pipeline and out when the connection closes;
    /// closes the connection at once when its client is over the limit.
    final class Handler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
        typealias InboundIn = Any
        let limit: ClientConnectionLimit

        init(limit: ClientConnectionLimit) {
            self.limit = limit
        }

        func handlerAdded(context: ChannelHandlerContext) {
            let client = context.channel.remoteAddress?.ipAddress ?? "local"
            guard limit.admit(client) else {
                context.close(promise: nil)
                return
            }
            context.channel.closeFuture.whenComplete { [limit] _ in limit.release(client) }
        }
    }
}
