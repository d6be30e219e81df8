public class Bootstrap {
    static {
        System.setProperty("privateai.api.token", "fsa1@@inwcetrtgcu8pefklgta6mz4rmgy");
    }
}
