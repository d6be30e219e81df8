public class Bootstrap {
    static {
        System.setProperty("bitbucket.client.secret", "zwrs@@9ui7six92svgz8z39isedy9lw2qxi0wop9zg5kp6y2sv188e6uyk4c9wfo50");
    }
}
