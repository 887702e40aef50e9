import Foundation

extension AttachmentWork {
    /// Where a published file goes in the descriptor.
    enum PublishedRole: Sendable { case main, thumbnail, variant(Platform) }

    /// A file to store, and what the descriptor records of it beside its URL.
    struct Publishable: Sendable {
        var file: FileToPublish
        /// Set for an encrypted copy: its size and key (the copy is a working file, removed
        /// once stored: `removeEncryptedCopies`).
        var copy: (bytes: Int64, encryption: AttachmentDescriptor.Encryption)?
    }

    /// What publishing stores, the same for a directory and an object store: each file of
    /// `filesToPublish` as it is, or, when the plan encrypts, its encrypted copy, written into
    /// a new working file owned by the ledger. Blocking file work: call it on a file thread.
    func publishables() throws(Reason) -> [(PublishedRole, Publishable)] {
        let files = filesToPublish
        let all = [(PublishedRole.main, files.main)] + (files.thumbnail.map { [(.thumbnail, $0)] } ?? [])
            + files.variants.map { (.variant($0.0), $0.1) }
        guard let encryption = plan.encryption else { return all.map { ($0.0, Publishable(file: $0.1)) } }
        var made: [(PublishedRole, Publishable)] = []
        for (role, file) in all {
            let output = encryptedCopyOutput()
            do throws(Reason) {
                let copy = try EncryptedCopy.make(file, with: encryption, output: output)
                made.append((role, Publishable(file: copy.file, copy: (copy.bytes, copy.encryption))))
            } catch {
                ledger.remove(output)
                removeEncryptedCopies(made)
                throw error
            }
        }
        return made
    }

    /// Removes the encrypted copies `publishables` made (they were stored, or publishing failed).
    func removeEncryptedCopies(_ files: [(PublishedRole, Publishable)]) {
        for (_, publishable) in files where publishable.copy != nil { ledger.remove(publishable.file.path) }
    }

    /// Records where each of `files` was stored: `urls`, in the same order.
    mutating func recordPublished(_ files: [(PublishedRole, Publishable)], at urls: [String]) {
        var main: DescriptorBuilder.PublishedFile?
        var thumbnail: DescriptorBuilder.PublishedFile?
        var variants: [Platform: DescriptorBuilder.PublishedFile] = [:]
        for ((role, publishable), url) in zip(files, urls) {
            let published = DescriptorBuilder.PublishedFile(url: url, bytes: publishable.copy?.bytes, encryption: publishable.copy?.encryption)
            switch role {
            case .main: main = published
            case .thumbnail: thumbnail = published
            case .variant(let platform): variants[platform] = published
            }
        }
        guard let main else { return }
        descriptor.recordPublished(file: main, thumbnail: thumbnail, variants: variants)
    }

    /// What publishing stores, to a directory or an object store alike: the delivered file,
    /// the thumbnail (`thumb.<ext>`) and each platform's variant.
    var filesToPublish: (main: FileToPublish, thumbnail: FileToPublish?, variants: [(Platform, FileToPublish)]) {
        let file = admitted
        return (FileToPublish(path: file.path, sha256: descriptor.deliveredSHA256, suffix: file.type.fileExtension),
                thumbnail.map { FileToPublish(path: $0.file, suffix: "thumb." + ($0.file as NSString).pathExtension) },
                variantFiles.map { ($0.key, FileToPublish(path: $0.value, suffix: ($0.value as NSString).pathExtension)) })
    }
}
