public class Bootstrap {
    static {
        System.setProperty("1password.service.account.token", "ops_@@eyJ+YvLKabmim2YsF85c9HorvDUJ7w7G+THrA4M/ahL5QPWJX1v8v0Np7NrkTCcXOHYBmK13adA7aQi2NP2RaqEKB+AV5Y4/vaeOr9tS2jIm4lLyYi6uzf42/a5SDFSiXiWuGAZsNL70Xm2PBUlsXOasy19PIcfwz8gWjNfbsPQXGDYezFTbRQ2ceLg3iZib6wq/537ucV1YhGSYC4I5+6Tz+rUcZtIUjMH2i024Woxq8Iyy+utNM4KbHJKpZ");
    }
}
