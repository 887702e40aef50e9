import AttachFetchCore
import Foundation
import Testing
import TestHelpers
@testable import AttachFetchObjectStore

/// Where requests go and where credentials come from, without a store.
@Suite struct ObjectStoreSettingsTests {
    private let credentials = ObjectStoreCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG")

    @Test func addressingIsPathStyleWithAGivenEndpointAndVirtualHostedOnAWS() throws {
        let custom = try ObjectStorePublishing(location: "s3://media/push/v1", baseURL: "https://cdn.example.test/v1",
                                               endpoint: "http://127.0.0.1:8333/", credentials: credentials)
        #expect(custom.prefix == "push/v1" && custom.key("a.jpg") == "push/v1/a.jpg")
        #expect(custom.url(ofKey: custom.key("a.jpg")) == "http://127.0.0.1:8333/media/push/v1/a.jpg")
        #expect(custom.url(ofKey: "") == "http://127.0.0.1:8333/media")
        let hosted = try ObjectStorePublishing(location: "s3://media/push", baseURL: "https://cdn.example.test/",
                                               endpoint: "https://store.example.test", virtualHostedStyle: true, credentials: credentials)
        #expect(hosted.url(ofKey: "push/a.jpg") == "https://media.store.example.test/push/a.jpg")
        let aws = try ObjectStorePublishing(location: "s3://media", baseURL: "https://cdn.example.test/", region: "eu-west-1",
                                            credentials: credentials)
        #expect(aws.prefix == "" && aws.key("a.jpg") == "a.jpg")
        #expect(aws.url(ofKey: "a.jpg") == "https://media.s3.eu-west-1.amazonaws.com/a.jpg")
        #expect(hosted.publicURL(of: "x.jpg") == "https://cdn.example.test/x.jpg")
    }

    @Test func theEnvironmentGivesEndpointRegionAndCredentialsInAWSsOrder() throws {
        let both = try ObjectStorePublishing.fromEnvironment(location: "s3://media/p", baseURL: "https://cdn.example.test/", environment: [
            "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:2",
            "AWS_REGION": "eu-central-1", "AWS_DEFAULT_REGION": "us-west-2"])
        #expect(both.endpoint == "http://127.0.0.1:2" && both.region == "eu-central-1" && !both.virtualHostedStyle)
        #expect(both.credentials == ObjectStoreCredentials(accessKeyID: "k", secretAccessKey: "s", sessionToken: "t"))
        let given = try ObjectStorePublishing.fromEnvironment(location: "s3://media/p", baseURL: "https://cdn.example.test/",
                                                              endpoint: "http://127.0.0.1:3", environment: [
            "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_DEFAULT_REGION": "us-west-2"])
        #expect(given.endpoint == "http://127.0.0.1:3" && given.region == "us-west-2")
        let defaults = try ObjectStorePublishing.fromEnvironment(location: "s3://media/p", baseURL: "https://cdn.example.test/",
                                                                 environment: ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"])
        #expect(defaults.endpoint == nil && defaults.region == "us-east-1" && defaults.virtualHostedStyle)
    }

    @Test func aSharedCredentialsFileProfileIsReadAndAMissingOneIsNamed() throws {
        let scratch = Scratch()
        let file = "\(scratch.path)/credentials"
        try """
        [default]
        aws_access_key_id = DEFAULTKEY
        aws_secret_access_key = defaultsecret
        # a comment
        [push]
        aws_access_key_id=PUSHKEY
        aws_secret_access_key = push/secret=
        aws_session_token = token
        """.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try ObjectStoreCredentials.fromEnvironment(["AWS_SHARED_CREDENTIALS_FILE": file])
            == ObjectStoreCredentials(accessKeyID: "DEFAULTKEY", secretAccessKey: "defaultsecret"))
        #expect(try ObjectStoreCredentials.fromEnvironment(["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "push"])
            == ObjectStoreCredentials(accessKeyID: "PUSHKEY", secretAccessKey: "push/secret=", sessionToken: "token"))
        #expect(throws: AttachFetchError.self) {
            try ObjectStoreCredentials.fromEnvironment(["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "absent"])
        }
        // The environment's pair wins over the file.
        #expect(try ObjectStoreCredentials.fromEnvironment(["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_ACCESS_KEY_ID": "E",
                                                             "AWS_SECRET_ACCESS_KEY": "S"]).accessKeyID == "E")
    }

    @Test func credentialsNeverPrint() throws {
        let target = try ObjectStorePublishing(location: "s3://media/p", baseURL: "https://cdn.example.test/",
                                               endpoint: "http://127.0.0.1:1", credentials: credentials)
        for text in ["\(credentials)", String(reflecting: credentials), "\(target)", String(reflecting: target)] {
            #expect(!text.contains(credentials.secretAccessKey) && !text.contains(credentials.accessKeyID), "\(text)")
        }
    }
}
