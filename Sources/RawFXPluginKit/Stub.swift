public enum PluginKitStub {}
