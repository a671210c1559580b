import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import TracerAPI

/// A request that is not HTTP/1.1 as the server takes it (over 1,000 headers, a header over
/// 80 KiB, a malformed line) is answered as every other refusal is, a 400 with the JSON error
/// body, instead of Hummingbird's empty 400; the connection then closes.
final class ParseErrorAnswer: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parse = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        let why: String
        switch parse {
        case .headerOverflow: why = "its headers are over the server's limit (1,000 fields, 80 KiB)"
        default: why = "it is not an HTTP/1.1 request (\(parse))"
        }
        let error = Components.Schemas._Error(.badRequest, message: "the request was refused: \(why)")
        let body = ByteBuffer(bytes: (try? APIJSON.bytes(error)) ?? [])
        let head = HTTPResponse(
            status: .badRequest,
            headerFields: [
                .contentType: "application/json; charset=utf-8", .contentLength: "\(body.readableBytes)",
                .connection: "close",
            ]
        )
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
