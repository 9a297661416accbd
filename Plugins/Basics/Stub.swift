public enum BasicsStub {}
