import ArgumentParser
import Foundation
import TracerModel
import TracerSite
@_spi(Blocking) import TracerStore

/// Which site a command on a store uses: `--map FILE` where given, else the site published in
/// the store (`config/site`), else none.
enum SiteResolution {
    /// The site for a command on `store`.
    ///
    /// A map file whose anchors disagree with the store's published site is an error naming
    /// both (a kiosk started with a stale copy must not write under another floor plan). With
    /// `publish` (`serve --map`, `daemon --map`), a map that agrees, or a store with none, is
    /// written to `config/site`.
    static func site(map: String?, store: DocumentStore, publish: Bool) throws -> Site? {
        let published = try store.read { try PublishedSite.load(from: $0) }
        guard let map else { return published?.site }
        let local = try PublishedSite(source: try read(map), file: map)
        if let published, published.digest != local.digest {
            let differences = local.site.anchorDifferences(from: published.site)
            if !differences.isEmpty {
                throw ValidationError(
                    "\(map) disagrees with the site published in \(store.path) (from \(published.file)): "
                        + differences.prefix(3).joined(separator: "; ")
                        + (differences.count > 3 ? "; and \(differences.count - 3) more" : "")
                        + "; to replace the published site: tracer map publish \(map) --store \(store.path)"
                )
            }
        }
        if publish { _ = try store.write { try local.publish(to: $0) } }
        return local.site
    }

    /// A map file's text, or a one-line error naming it.
    static func read(_ file: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ValidationError("\(file): cannot read the BeaconMap file")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
