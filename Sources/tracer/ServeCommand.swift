import ArgumentParser
import Foundation
import Logging
import TracerCards
import TracerExposure
import TracerModel
import TracerServer
import TracerSite
@_spi(Blocking) import TracerStore

/// `tracer serve`: the admin HTTP API and the live dashboard.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the admin HTTP API and the live floor-plan dashboard (loopback by default).",
        discussion: """
            Routes: /health, /v1/features, /v1/beacons, /v1/beacons/{key}/exposures?since=, /v1/devices/{id}, \
            POST /v1/reports (multipart), /v1/reports?status=pending with /v1/reports/{id}/image, POST \
            /v1/reports/{id}/approve and /deny (the health team's review), /v1/responses, /v1/watch?path= (Server-Sent Events), and the dashboard \
            at /, POST /v1/sync (kiosks replicating), /v1/kiosks (their sync state), /v1/site (the published \
            BeaconMap), and the person's page at /me with POST /v1/links (a badge's one-time link: tracer token create \
            --link) and /v1/page. Every other /v1 route but features takes a token: tracer token create --role admin|kiosk|device. \
            --tls-cert and --tls-key serve HTTPS; a reverse proxy in front works too (docs/deploying-a-site.md).
            """
    )

    @OptionGroup var options: StoreOptions
    @OptionGroup(title: "Exposure policy (and the site's floor plan, with --map)") var policy:
        ReportCommand.PolicyOptions
    @Option(help: "HOST:PORT to listen on (0 as the port: any free one).") var bind = "127.0.0.1:8080"
    @Option(help: "Seconds since a device was last heard at an anchor for it to count as there now.")
    var occupancyWindow: Double = 120
    @Option(help: "Threads reading uploaded results (one Tesseract engine each).") var ocrThreads = 2
    @Option(help: "Uploads that may wait for a reader; more are answered 503 with Retry-After.") var ocrQueue = 8
    @Option(help: "Serve HTTPS with this PEM certificate (chain); needs --tls-key.") var tlsCert: String?
    @Option(help: "The PEM private key of --tls-cert.") var tlsKey: String?
    @Option(help: "Close a connection that sends nothing for this many seconds (half a request included).")
    var idleTimeout: Double = 30
    @Option(help: "Connections open at once; more wait to be accepted.") var maxConnections = 1024
    @Option(help: "Connections open at once from one client address; more are closed as they arrive.")
    var maxConnectionsPerClient = 128
    @Option(
        help:
            "Failed token attempts a client address may make in a minute before it is answered 429 for the rest of it."
    )
    var failedTokenLimit = 10
    @Option(
        help: ArgumentHelp(
            "Who runs this server, for the browsers' push services (Web Push's VAPID subject): mailto:… or https://….",
            valueName: "URI"
        )
    ) var pushContact = "mailto:tracer@localhost"

    func run() async throws {
        let (host, port) = try Server.address(bind)
        guard occupancyWindow > 0 else { throw ValidationError("--occupancy-window takes seconds above 0") }
        guard (1...64).contains(ocrThreads), (0...10_000).contains(ocrQueue) else {
            throw ValidationError("--ocr-threads takes 1 to 64, --ocr-queue 0 or more")
        }
        guard failedTokenLimit > 0 else { throw ValidationError("--failed-token-limit takes 1 or more") }
        guard idleTimeout > 0, idleTimeout <= 86_400, maxConnections > 0, maxConnectionsPerClient > 0 else {
            throw ValidationError(
                "--idle-timeout takes seconds above 0 up to 86400, --max-connections and --max-connections-per-client 1 or more"
            )
        }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        guard pushContact.hasPrefix("mailto:") || pushContact.hasPrefix("https://"), pushContact.count > 8 else {
            throw ValidationError(
                "--push-contact takes mailto:someone@example.org or an https:// address, not '\(pushContact)'"
            )
        }
        var serverOptions = Server.Options()
        serverOptions.idleTimeout = .milliseconds(Int(idleTimeout * 1000))
        serverOptions.maxConnections = maxConnections
        serverOptions.maxConnectionsPerClient = maxConnectionsPerClient
        if let tlsCert, let tlsKey { serverOptions.tls = try Server.Options.tls(certificate: tlsCert, key: tlsKey) }
        var logger = Logger(label: "tracer.serve")
        logger.logLevel =
            ProcessInfo.processInfo.environment["TRACER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .notice
        // The store and the API's threads are released, and waited for, on every way out.
        let open = { try options.open(creating: true) }
        try await withShutdown(open) { store in
            let site = try policy.site(in: store, publish: true)
            let engine = try policy.engine(site: site)
            let api = {
                try await API(
                    store: store,
                    site: site,
                    engine: engine,
                    limiter: FailureLimiter(limit: failedTokenLimit),
                    occupancyWindow: occupancyWindow,
                    ocrSlots: ocrThreads,
                    ocrQueue: ocrQueue,
                    reviewImages: options.reviewImages,
                    logger: logger
                )
            }
            try await withShutdown(api) { api in
                try await serve(
                    api,
                    store: store,
                    engine: engine,
                    at: (host, port),
                    options: serverOptions,
                    logger: logger
                )
            }
        }
    }

    /// The server's services on `api` until shut down.
    func serve(
        _ api: API,
        store: DocumentStore,
        engine: ExposureEngine,
        at address: (host: String, port: Int),
        options serverOptions: Server.Options,
        logger: Logger
    ) async throws {
        let (host, port) = address
        if try await store.reading({ db in try TokenStore.list(in: db) }).isEmpty {
            Output.error(
                "no tokens yet: create one with `tracer token create --role admin --store \(options.display)`"
            )
        }
        let scheme = serverOptions.tls == nil ? "http" : "https"
        let app = try Server.application(api, host: host, port: port, options: serverOptions, logger: logger) { bound in
            let shown = host.contains(":") ? "[\(host)]" : host
            Output.line(
                "serving \(options.display) on \(scheme)://\(shown):\(bound)/ (the dashboard; the API under /v1)"
            )
        }
        // Web Push to the people's pages: one notifier per site (the store's lock), resuming from
        // its saved change token; the sender's client closed on every path out.
        let key = try await store.writing { db in try WebPush.siteKey(in: db) }
        let services: (PushSender) async throws -> Void = { sender in
            var push = Notifier(
                store: store,
                destination: .push(sender),
                position: .store("push"),
                role: "push",
                logger: logger
            )
            push.startsAgain = true
            let purge = SitePurge(store: store, engine: engine, retention: api.retention, logger: logger)
            try await Services.run(
                [app, ReviewImagePurge(api: api, logger: logger), purge, push],
                logger: logger
            )
        }
        try await withShutdown({ PushSender(key: key, subject: pushContact, services: api.pushServices) }, services)
    }
}

/// `tracer token create|list|revoke`: who may use the API.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Create, list or revoke API tokens (stored hashed; a token is shown once).",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Create a token and print it once: admin reads everything, a kiosk replicates its anchor, reads the badge ids it needs and posts reports, a device reads its own device."
        )
        @OptionGroup var options: StoreOptions
        @Option(help: "admin, kiosk or device.") var role: String
        @Option(
            help:
                "A device token's device id. A card's (--link) must be one the site knows: an issued badge (badge:SERIAL), an iBeacon (UUID:MAJOR:MINOR), or a device it has heard."
        )
        var device: String?
        @Option(help: "A kiosk token's anchor: the only beacons/{KEY} it may replicate.") var anchor: String?
        @Option(help: "A name to know it by (shown in the audit log).") var name: String?
        @Option(
            help: ArgumentHelp(
                "A device's one-time link to its page instead of a token: the site server's public address (https://tracer.example.org).",
                valueName: "BASE_URL"
            )
        ) var link: String?
        @Option(
            help: ArgumentHelp("With --link: the link's QR code as a PNG, for the badge's card.", valueName: "FILE")
        )
        var qr: String?
        @Option(
            help: ArgumentHelp(
                "With --link: the card to print, a PDF with the site's name, the device, the QR code and what to do.",
                valueName: "FILE"
            )
        )
        var card: String?
        @Option(help: "With --card: a4 or letter.") var paper: Paper = .a4
        @Option(
            help: ArgumentHelp(
                "Write the token to FILE, readable by its owner only (mode 0600), instead of printing it: a token file for --token-file.",
                valueName: "FILE"
            )
        )
        var out: String?
        @Flag(help: "Print JSON: {\"id\", \"token\", \"role\"} (with --link: {\"id\", \"link\", \"deviceId\"}).")
        var json = false

        func run() throws {
            guard let r = Role(rawValue: role) else {
                throw ValidationError("--role takes admin, kiosk or device, not '\(role)'")
            }
            if r == .device, device?.isEmpty ?? true { throw ValidationError("a device token needs --device ID") }
            if r != .device, device != nil { throw ValidationError("only a device token takes --device") }
            if let device, device.contains("/") { throw ValidationError("--device takes a device id, not '\(device)'") }
            if r != .kiosk, anchor != nil { throw ValidationError("only a kiosk token takes --anchor") }
            if qr != nil, link == nil { throw ValidationError("--qr FILE goes with --link BASE_URL") }
            if card != nil, link == nil { throw ValidationError("--card FILE goes with --link BASE_URL") }
            if out != nil, link != nil {
                throw ValidationError("--out FILE writes a token; a link is printed (its card: --card FILE)")
            }
            if out != nil, json { throw ValidationError("--out FILE writes the token alone; --json prints it") }
            if let out { try SecretFile.checkWritable(out, option: "--out") }
            if let link {
                guard r == .device, let device else {
                    throw ValidationError("--link makes a device's link: give --role device --device ID")
                }
                return try makeLink(device, base: link)
            }
            let store = try options.open(creating: true)
            if let anchor {
                guard (try? Collections.beacon(anchor)) != nil else {
                    throw ValidationError("--anchor takes an anchor key, not '\(anchor)'")
                }
                // A key the published site does not have is a typo until proven otherwise.
                if let site = try store.read({ try PublishedSite.load(from: $0) }), site.site.anchor(anchor) == nil {
                    throw ValidationError("no anchor '\(anchor)' in the site published in \(options.display)")
                }
            }
            // A plain token is for a program or a shell (any id it names); a badge's id is either
            // issued here or a typo, whatever the token is for.
            if let device, device.hasPrefix(Interaction.badgePrefix),
                let unknown = try store.read({ try TokenStore.unknownDevice(device, in: $0) })
            {
                throw ValidationError(unknown)
            }
            let created = try store.write {
                try TokenStore.create(role: r, deviceID: device, anchor: anchor, name: name, in: $0)
            }
            if let out {
                do {
                    try SecretFile.write(created.token + "\n", to: out)
                } catch {
                    // No file: no token either.
                    _ = try? store.write { try TokenStore.revoke(created.id, in: $0) }
                    throw ValidationError("--out \(out): \(error)")
                }
                Output.error(
                    "token \(created.id) (\(r.rawValue)\(device.map { " for \($0)" } ?? "")\(anchor.map { " for anchor \($0)" } ?? "")) written to \(out), readable by you only; stored hashed"
                )
            } else if json {
                Output.line(
                    JSON.string(
                        .map(["id": .string(created.id), "token": .string(created.token), "role": .string(r.rawValue)])
                    )
                )
            } else {
                Output.line(created.token)
                Output.error(
                    "token \(created.id) (\(r.rawValue)\(device.map { " for \($0)" } ?? "")\(anchor.map { " for anchor \($0)" } ?? "")): shown once, stored hashed; send it as 'Authorization: Bearer …'"
                )
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens (never their secrets).")
        @OptionGroup var options: StoreOptions

        func run() throws {
            let docs = try options.open().read { try TokenStore.list(in: $0) }
            if docs.isEmpty { Output.line("no tokens") }
            for d in docs {
                let revoked = d["revokedAt"] != nil ? "  revoked \(ExposureOutput.second(d["revokedAt"]))" : ""
                Output.line(
                    "\(d.id)  \(d["role"]?.stringValue ?? "?")  \(d["name"]?.stringValue ?? "")"
                        + (d["deviceId"]?.stringValue.map { "  device \($0)" } ?? "")
                        + (d["anchor"]?.stringValue.map { "  anchor \($0)" } ?? "")
                        + (d["link"] == nil
                            ? ""
                            : d["linkedAt"] == nil
                                ? "  link not opened yet" : "  link opened \(ExposureOutput.second(d["linkedAt"]))")
                        + "  created \(ExposureOutput.second(d["createdAt"]))" + revoked
                )
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token: refused from the next request on.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The token's id (the part after tracer_).") var id: String

        func run() throws {
            guard try options.open().write({ try TokenStore.revoke(id, in: $0) }) else {
                throw ValidationError("no token with id '\(id)' (tracer token list)")
            }
            Output.line("token \(id) revoked")
        }
    }
}

extension TokenCommand.Create {
    /// `--link BASE_URL`: an http(s) address with a host and nothing after the path.
    static func checkBase(_ base: String) throws {
        guard let url = URL(string: base), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil
        else {
            throw ValidationError(
                "--link takes the site server's address as people's phones reach it (like https://tracer.example.org), not '\(base)'"
            )
        }
    }

    /// `--link BASE_URL [--qr FILE]`: a device's one-time link to its page (and its QR code).
    /// Everything that can be wrong is checked before the link is made.
    func makeLink(_ device: String, base: String) throws {
        try Self.checkBase(base)
        if let qr { try SecretFile.checkWritable(qr, option: "--qr") }
        if let card { try SecretFile.checkWritable(card, option: "--card") }
        let store = try options.open(creating: true)
        if let unknown = try store.read({ try TokenStore.unknownDevice(device, in: $0) }) {
            throw ValidationError(unknown)
        }
        let site = try card.map { try CardPrinting.siteName(store, options, option: "--card \($0)") }
        if let site, let card { try CardPrinting.check(site: site, paper: paper, option: "--card \(card)") }
        let made = try store.write { try TokenStore.createLink(deviceID: device, name: name, in: $0) }
        let address = made.url(base: base)
        // The QR code and the card hold the link: readable by their owner only.
        for (option, file) in [("--qr", qr), ("--card", card)] {
            guard let file else { continue }
            do {
                if option == "--qr" {
                    try SecretFile.write(bytes: try QRCode(address).png(), to: file)
                } else {
                    let printed = CardPrinting.card(site: site!, device: device, link: address)
                    try CardPrinting.write([printed], site: site!, paper: paper, to: file)
                }
            } catch {
                // No card: no link either.
                _ = try? store.write { try TokenStore.revoke(made.id, in: $0) }
                throw ValidationError("\(option) \(file): \(error)")
            }
        }
        // Made, and its QR code written: the new card replaces the device's earlier ones (a lost
        // phone, a card someone else opened), as the page's "already used" screen tells the person.
        let replaced = try store.write { try TokenStore.revokeCards(of: device, keeping: made.id, in: $0) }
        if !replaced.isEmpty {
            Output.error(
                "revoked \(device)'s earlier card\(replaced.count == 1 ? "" : "s") (\(replaced.joined(separator: ", "))): their pages lose access within seconds"
            )
        }
        if json {
            Output.line(
                JSON.string(.map(["id": .string(made.id), "link": .string(address), "deviceId": .string(device)]))
            )
        } else {
            Output.line(address)
            Output.error(
                "link \(made.id) for device \(device): opens the device's page in the first browser that opens it, once\(qr.map { "; its QR code is in \($0)" } ?? "")\(card.map { "; its card to print is in \($0)" } ?? ""). A lost phone: a new link for the device, which revokes this one"
            )
        }
    }
}
