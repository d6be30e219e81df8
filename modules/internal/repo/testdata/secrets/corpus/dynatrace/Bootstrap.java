public class Bootstrap {
    static {
        System.setProperty("dynatrace.api.token", "dt0c@@01.1og44gpr9v9ufglya1mxm6bb.g6h5fpqvpkvtkqvkr013w3ukc5hm34emkqtoinr8ejhfl5rjlm71jl520g71bzp1");
    }
}
